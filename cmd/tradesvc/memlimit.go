package main

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// defaultGCPercent is the garbage collector's target when GOGC is not set. Each collection
// marks the whole live heap (the embedded simulator holds every open position) while its idle
// workers take both cores from Postgres and Kafka, and the order path stalls behind it: the
// slow answers of a RESULT run come in clusters at the collections (docs/benchmarks.md). So
// collect rarely: the heap may grow to twenty-one times what is live, and the soft memory
// limit (below) bounds it. A RESULT order allocates about 230 KB, so at 200 orders/s and a
// live heap of 150 MB this collects about once a minute, where 800 did every 25 s. Until the
// live heap reaches a third of the limit this never collects more often than the former 200
// did; past it every target is governed by the limit alike.
const defaultGCPercent = 2000

// minMemoryLimit is the least soft memory limit the service sets itself (GOMEMLIMIT unset).
const minMemoryLimit = 1 << 30

// tuneGC sets the collector's target and the soft memory limit that GOGC and GOMEMLIMIT do
// not set. The limit is a quarter of the memory the process may use (the cgroup's limit, else
// the machine's), at least 1 GiB: the service shares its machine, and near the limit the
// collector runs sooner. A fixed 1 GiB made it run near its limit once the embedded
// simulator held a bench's worth of open positions, marking the whole heap several times a
// second (docs/benchmarks.md).
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit(readMemTotal(), readCgroupLimit()))
	}
}

// memoryLimit is a quarter of the smaller of total and cgroup (0: unknown), at least
// minMemoryLimit.
func memoryLimit(total, cgroup uint64) int64 {
	avail := total
	if cgroup > 0 && (avail == 0 || cgroup < avail) {
		avail = cgroup
	}
	return max(int64(avail/4), minMemoryLimit)
}

// readMemTotal is the machine's memory in bytes (/proc/meminfo), 0 when unknown.
func readMemTotal() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// readCgroupLimit is the memory limit of the process's cgroup (v2 memory.max, else v1
// memory.limit_in_bytes), 0 when there is none or it cannot be read.
func readCgroupLimit() uint64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		return parseCgroupLimit(b)
	}
	return 0
}

// parseCgroupLimit reads a cgroup memory limit file: "max" (v2) or a number of bytes; v1's
// "no limit" is a number near 2^63, which counts as none too.
func parseCgroupLimit(b []byte) uint64 {
	s := string(bytes.TrimSpace(b))
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n >= 1<<60 {
		return 0 // "max", or unreadable
	}
	return n
}
