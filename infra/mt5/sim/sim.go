// Package sim is an MT5 trade server in hedging mode, faithful enough to exercise every path
// of the trading service: symbols with sessions and trade rules, accounts in groups with
// margin and stop-out, market and pending execution, SL/TP, expirations, swaps, partial
// fills, requotes, fault injection, and a journal that makes its state survive restarts.
// It implements mt5.TradeServer; its admin hooks are plain Go methods.
package sim

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"tradesvc/infra/check"
	"tradesvc/infra/mt5"
	"tradesvc/infra/wait"
)

// Clock tells the simulator the time; tests inject a settable one.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// SyncMode says how the journal reaches the disk.
type SyncMode int

const (
	// SyncBatch fsyncs every group commit before its facts are visible (the default).
	SyncBatch SyncMode = iota
	// SyncNone writes but never fsyncs: survives a process crash, not a machine crash (the
	// service's embedded simulator unless --sim-fsync).
	SyncNone
)

// Config configures a simulator.
type Config struct {
	// DataDir holds the journal (journal.log). Required.
	DataDir string
	// Seed is the seed file content; nil means DefaultSeed.
	Seed []byte
	// Clock defaults to the system clock.
	Clock Clock
	// RNGSeed seeds the quote generator and slippage.
	RNGSeed uint64
	// TickInterval is the period of the background quote generator; zero disables it
	// (tests drive quotes with SetQuote / PushTick / GenerateTicks).
	TickInterval time.Duration
	// HousekeepInterval is the period of expirations, rollover and stop-out checks; zero
	// disables the background loop (tests call Housekeep).
	HousekeepInterval time.Duration
	// TickBuffer is how many ticks the tick feed keeps (default 65536).
	TickBuffer int
	// FactWindow is how many recent facts are served from memory (default 65536); older
	// cursors are served from the journal file.
	FactWindow int
	// Sync is the journal's durability mode.
	Sync SyncMode
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Validate reports every problem of the configuration.
func (c Config) Validate() error {
	var errs check.Problems
	errs.If(c.DataDir == "", "sim: DataDir is required")
	errs.If(c.TickInterval < 0 || c.HousekeepInterval < 0, "sim: intervals must not be negative")
	errs.If(c.TickBuffer < 0 || c.FactWindow < 0, "sim: buffer sizes must not be negative")
	return errs.Err()
}

// Sim is the simulator. All state is guarded by mu; the journal has its own lock.
type Sim struct {
	cfg    Config
	clock  Clock
	log    *slog.Logger
	server mt5.ServerInfo

	mu          sync.Mutex
	rng         *rand.Rand
	groups      map[string]*mt5.Group
	groupList   []mt5.Group
	symbols     map[string]*symbol
	symbolList  []*symbol
	accounts    map[int64]*account
	loginList   []int64
	orderOwner  map[int64]*account // open pending order ticket -> owner
	posOwner    map[int64]*account // open position ticket -> owner
	expiries    expiryHeap
	nextOrder   int64
	nextDeal    int64
	lastSeq     uint64
	rolloverDay int64 // server day number of the last rollover done
	fault       Fault
	pendingRecs []record // facts of the current operation, handed to the journal on flush

	ticks     *tickRing
	jr        *journal
	replayEnd int64
	replayIdx []idxEntry

	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed bool
}

// Open loads the seed, replays the journal under cfg.DataDir and starts the background
// loops that cfg asks for.
func Open(cfg Config) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Seed == nil {
		cfg.Seed = DefaultSeed
	}
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.TickBuffer = cmp.Or(cfg.TickBuffer, 65536)
	cfg.FactWindow = cmp.Or(cfg.FactWindow, 65536)
	seed, err := ParseSeed(cfg.Seed)
	if err != nil {
		return nil, err
	}
	s := &Sim{cfg: cfg, clock: cfg.Clock, log: cfg.Logger,
		rng:        rand.New(rand.NewPCG(cfg.RNGSeed, cfg.RNGSeed^0x9e3779b97f4a7c15)),
		orderOwner: map[int64]*account{}, posOwner: map[int64]*account{},
		nextOrder: 1, nextDeal: 1,
		// tick sequences start at the opening instant in microseconds: they keep increasing
		// across restarts as long as the feed averages under a million ticks a second
		ticks: newTickRing(cfg.TickBuffer, uint64(cfg.Clock.Now().UnixMicro()))}
	if err := s.load(seed); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("sim: data dir: %w", err)
	}
	path := filepath.Join(cfg.DataDir, "journal.log")
	if err := s.replay(path); err != nil {
		return nil, err
	}
	jr, err := openJournal(path, cfg.Sync, cfg.FactWindow, s.lastSeq, s.replayEnd, s.replayIdx)
	if err != nil {
		return nil, err
	}
	s.jr = jr
	s.mu.Lock()
	if s.rolloverDay == 0 {
		s.rolloverDay = s.serverDay(s.nowMs())
		s.emitMeta(meta{RolloverDay: s.rolloverDay})
	}
	for _, y := range s.symbolList {
		s.applyTickLocked(y, y.initialBid, addPoints(y, y.initialBid, y.spreadPoints), 0, false)
	}
	s.flushLocked()
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.jr.run(ctx) }()
	if cfg.TickInterval > 0 {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); wait.Every(ctx, cfg.TickInterval, func() { s.GenerateTicks(1) }) }()
	}
	if cfg.HousekeepInterval > 0 {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); wait.Every(ctx, cfg.HousekeepInterval, s.housekeepLogged) }()
	}
	return s, nil
}

// housekeepLogged is the background loop's Housekeep: nobody waits for it, so a journal
// failure is logged (every later trade request also fails on it, with the same error).
func (s *Sim) housekeepLogged() {
	if err := s.Housekeep(); err != nil {
		s.log.Error("simulator housekeeping failed", "err", err)
	}
}

// Close stops the background loops, commits what is queued and closes the journal.
func (s *Sim) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return s.jr.close()
}

func (s *Sim) nowMs() int64 { return s.clock.Now().UnixMilli() }

// tradeTime is now truncated to whole seconds (trade timestamps have second resolution).
func (s *Sim) tradeTime() int64 { return s.clock.Now().Unix() * 1000 }

// serverDay is the day number (days since epoch) of ms in server time.
func (s *Sim) serverDay(ms int64) int64 {
	off := int64(s.server.TimeZoneOffsetMinutes) * 60000
	t := ms + off
	if t < 0 {
		return (t - 86400000 + 1) / 86400000
	}
	return t / 86400000
}

// serverDayStart is the UTC ms at which server day d begins.
func (s *Sim) serverDayStart(d int64) int64 {
	return d*86400000 - int64(s.server.TimeZoneOffsetMinutes)*60000
}

// weekdayOfDay gives the weekday (0 Sunday) of server day d (day 0 was a Thursday).
func weekdayOfDay(d int64) int { return int(((d % 7) + 7 + 4) % 7) }
