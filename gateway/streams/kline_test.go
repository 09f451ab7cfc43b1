package streams

import (
	"testing"

	"tradesvc/events/dec"
	"tradesvc/query"
)

type klineEmit struct {
	iv      int
	open    int64
	o, h, l string
	c       string
	n       int64
	closed  bool
}

func applyTick(k *klines, t int64, bid string) []klineEmit { return applySeq(k, t, 0, bid) }

func applySeq(k *klines, t int64, seq uint64, bid string) []klineEmit {
	var out []klineEmit
	b := dec.MustParse(bid)
	k.apply(t, seq, &b, func(iv int, br *bar, closed bool) {
		out = append(out, klineEmit{iv, br.openTime, dec.String(br.o), dec.String(br.h), dec.String(br.l), dec.String(br.c), br.n, closed})
	})
	return out
}

func TestFloorAlignsBucketsToTheUnixEpochInUTC(t *testing.T) {
	// 2024-03-05 13:47:12.345 UTC.
	const ts = int64(1709646432345)
	want := map[string]int64{"1m": 1709646420000, "5m": 1709646300000, "15m": 1709646300000, "30m": 1709645400000,
		"1h": 1709643600000, "2h": 1709640000000, "4h": 1709640000000, "1d": 1709596800000}
	for _, iv := range KlineIntervals {
		if got := floorMs(ts, iv.Ms); got != want[iv.Name] {
			t.Errorf("%s: floor = %d, want %d", iv.Name, got, want[iv.Name])
		}
	}
	if floorMs(-1, 60_000) != -60_000 {
		t.Error("times before the epoch floor downwards")
	}
}

func TestKlineEmitsTheCurrentBarOnEveryTickOfEachInterval(t *testing.T) {
	var k klines
	first := applyTick(&k, 120_000, "1.10000")
	if len(first) != len(KlineIntervals) {
		t.Fatalf("first tick emitted %d bars, want one per interval", len(first))
	}
	got := applyTick(&k, 150_000, "1.09000")
	if len(got) != len(KlineIntervals) {
		t.Fatalf("second tick emitted %d bars", len(got))
	}
	oneMin := got[0]
	want := klineEmit{0, 120_000, "1.10000", "1.10000", "1.09000", "1.09000", 2, false}
	if oneMin != want {
		t.Fatalf("1m bar = %+v, want %+v", oneMin, want)
	}
	got = applyTick(&k, 170_000, "1.12000")
	if got[0].h != "1.12000" || got[0].l != "1.09000" || got[0].c != "1.12000" || got[0].o != "1.10000" || got[0].n != 3 {
		t.Fatalf("1m bar after a new high = %+v", got[0])
	}
}

func TestKlineClosesTheBarWhenTheNextBucketStarts(t *testing.T) {
	var k klines
	applyTick(&k, 60_000, "2.0")
	applyTick(&k, 119_999, "2.5")
	got := applyTick(&k, 180_001, "3.0") // skips the empty 120_000 bucket, as REST klines do
	// 1m: the finished bar (closed), then the new one; 5m (bucket 0 to 300_000): only the update.
	if len(got) != len(KlineIntervals)+1 {
		t.Fatalf("emitted %d bars, want %d: %+v", len(got), len(KlineIntervals)+1, got)
	}
	closed := klineEmit{0, 60_000, "2.0", "2.5", "2.0", "2.5", 2, true}
	opened := klineEmit{0, 180_000, "3.0", "3.0", "3.0", "3.0", 1, false}
	if got[0] != closed || got[1] != opened {
		t.Fatalf("1m emissions = %+v, %+v; want %+v, %+v", got[0], got[1], closed, opened)
	}
	if got[2].iv != 1 || got[2].closed || got[2].open != 0 || got[2].n != 3 || got[2].h != "3.0" {
		t.Fatalf("5m emission = %+v", got[2])
	}
}

func TestKlineIgnoresATickOlderThanTheCurrentBucket(t *testing.T) {
	var k klines
	applyTick(&k, 180_000, "3.0")
	got := applyTick(&k, 60_000, "9.9") // a late redelivery
	for _, e := range got {
		if e.iv == 0 {
			t.Fatalf("the 1m bar changed on a late tick: %+v", e)
		}
		if e.h == "9.9" && e.open != 0 {
			t.Fatalf("a late tick reached bar %+v", e)
		}
	}
}

func minuteBar(open int64, o, h, l, c string, n int64) query.Bar {
	return query.Bar{OpenTime: open, Open: dec.MustParse(o), High: dec.MustParse(h), Low: dec.MustParse(l),
		Close: dec.MustParse(c), Count: n}
}

// Issue 17, item 8: a gateway that starts resumes every interval's current bar from the
// stored 1-minute bars (folded as GET /v1/klines folds them) and skips the ticks they hold,
// so the first bar it closes is the REST bar, not a bar begun at its first tick.
func TestKlineSeedResumesEveryIntervalFromTheStoredBars(t *testing.T) {
	const day = int64(1_800_000_000_000) - int64(1_800_000_000_000)%86_400_000
	h := day + 3_600_000*13 // 13:00 UTC
	stored := []query.Bar{
		minuteBar(h-60_000, "5.0", "5.5", "4.0", "5.2", 4), // 12:59: only the day and 2h/4h buckets hold it
		minuteBar(h, "5.2", "6.0", "5.1", "5.9", 3),        // 13:00
		minuteBar(h+60_000, "5.9", "5.9", "5.3", "5.4", 2), // 13:01, the newest
	}
	var k klines
	if !k.seed(41, stored) {
		t.Fatal("not seeded")
	}
	want := map[string]klineEmit{
		"1m": {0, h + 60_000, "5.9", "5.9", "5.3", "5.4", 2, false},
		"5m": {1, h, "5.2", "6.0", "5.1", "5.4", 5, false},
		"1h": {4, h, "5.2", "6.0", "5.1", "5.4", 5, false},
		"2h": {5, h - 3_600_000, "5.0", "6.0", "4.0", "5.4", 9, false},
		"1d": {7, day, "5.0", "6.0", "4.0", "5.4", 9, false},
	}
	// Ticks the stored bars already count (the tail's backfill) change nothing.
	if got := applySeq(&k, h+61_000, 40, "9.9"); len(got) != 0 {
		t.Fatalf("a tick the seed holds was folded again: %+v", got)
	}
	if got := applySeq(&k, h+62_000, 41, "9.9"); len(got) != 0 {
		t.Fatalf("the seed's last tick was folded again: %+v", got)
	}
	// The next tick continues the seeded bars.
	got := applySeq(&k, h+70_000, 42, "5.35")
	byName := map[string]klineEmit{}
	for _, e := range got {
		byName[KlineIntervals[e.iv].Name] = e
	}
	for name, w := range want {
		w.n++
		w.c = "5.35"
		if byName[name] != w {
			t.Errorf("%s after the next tick: %+v, want %+v", name, byName[name], w)
		}
	}
	// The first tick of 13:02 closes the seeded 13:01 bar: the stored bar plus the tick.
	got = applySeq(&k, h+120_000, 43, "5.5")
	if closed := (klineEmit{0, h + 60_000, "5.9", "5.9", "5.3", "5.35", 3, true}); got[0] != closed {
		t.Fatalf("closed 1m bar %+v, want %+v", got[0], closed)
	}
	// A second seed (a symbol already live) changes nothing.
	if k.seed(99, stored[:1]) {
		t.Fatal("a live symbol was seeded again")
	}
	var empty klines
	if empty.seed(5, nil) {
		t.Fatal("seeded from no bar")
	}
}
