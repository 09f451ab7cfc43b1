package sim

// trigHeap orders trigger entries by price in points. A max-heap serves "fires when the
// market falls to or below the key" (buy limits, sell stops, buy-position SL, sell-position
// TP); a min-heap serves "fires when the market rises to or above the key". A tick only
// looks at the top, so its cost does not grow with the number of resting orders. Entries are
// never removed in place: a changed or removed order bumps its version and the stale entry
// is discarded when it reaches the top.
type trigHeap struct {
	max bool
	e   []trigEntry
}

type trigEntry struct {
	key int64
	tkt int64
	ver uint32
}

func (h *trigHeap) less(i, j int) bool {
	if h.e[i].key == h.e[j].key {
		return h.e[i].tkt < h.e[j].tkt // older ticket first at equal prices
	}
	if h.max {
		return h.e[i].key > h.e[j].key
	}
	return h.e[i].key < h.e[j].key
}

func (h *trigHeap) push(x trigEntry) {
	h.e = append(h.e, x)
	i := len(h.e) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.e[i], h.e[p] = h.e[p], h.e[i]
		i = p
	}
}

func (h *trigHeap) pop() {
	n := len(h.e) - 1
	h.e[0] = h.e[n]
	h.e = h.e[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h.e[i], h.e[m] = h.e[m], h.e[i]
		i = m
	}
}

// top returns the best valid entry, discarding stale ones.
func (h *trigHeap) top(valid func(trigEntry) bool) (trigEntry, bool) {
	for len(h.e) > 0 {
		if valid(h.e[0]) {
			return h.e[0], true
		}
		h.pop()
	}
	return trigEntry{}, false
}

// fires reports whether the market price m reaches key on this heap's side.
func (h *trigHeap) fires(m, key int64) bool {
	if h.max {
		return m <= key
	}
	return m >= key
}

// expiryHeap is a min-heap of order deadlines.
type expiryHeap struct{ e []trigEntry }

func (h *expiryHeap) push(x trigEntry) {
	t := trigHeap{e: h.e}
	t.push(x)
	h.e = t.e
}

func (h *expiryHeap) pop() {
	t := trigHeap{e: h.e}
	t.pop()
	h.e = t.e
}
