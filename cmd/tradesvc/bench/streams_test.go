package bench

import (
	"testing"
	"time"
)

func TestDealFramesAreReadByTheirExactKeys(t *testing.T) {
	// E (a number) and c (the comment) differ from e and C only in case.
	frame := []byte(`{"e":"DEAL","E":1795523143000,"L":1003,"d":605,"o":601,"P":601,"s":"BTCUSD","S":"BUY","en":"IN",` +
		`"q":"0.01","p":"60167.98","rp":"0.0000","n":"0.0000","sw":"0.0000","c":"#00009g","T":1795523143000,"C":"bn-x-499"}`)
	f, ok := dealOf(frame)
	if !ok || f.ClientID != "bn-x-499" || f.Login != 1003 || f.OrderID != 601 || f.Comment != "#00009g" {
		t.Fatalf("dealOf = %+v, %v", f, ok)
	}
	noC := []byte(`{"e":"DEAL","E":1,"L":1003,"o":602,"c":"#00009h","T":1}`)
	if f, ok := dealOf(noC); !ok || f.ClientID != "" || f.OrderID != 602 {
		t.Fatalf("a DEAL without C: %+v %v", f, ok)
	}
	for _, other := range []string{
		`{"e":"POSITION_UPDATE","E":1,"L":1003,"x":"NEW","i":601,"c":"#00009g"}`,
		`{"e":"ACCOUNT_UPDATE","E":1,"L":1003,"x":"UPDATE","b":"1.0000","cr":"0.0000"}`,
		`{"e":"listenKeyExpired","E":1,"listenKey":"abc"}`,
		`not json "e":"DEAL"`,
	} {
		if _, ok := dealOf([]byte(other)); ok {
			t.Errorf("%s read as a DEAL", other)
		}
	}
}

func TestDealBookKeepsTheFirstArrivalAndAdoptsDealsWithoutC(t *testing.T) {
	d := newDealBook()
	t0 := time.UnixMilli(1_000_000)
	d.record(dealFrame{Kind: "DEAL", Login: 1001, OrderID: 7, ClientID: "a"}, t0)
	d.record(dealFrame{Kind: "DEAL", Login: 1001, OrderID: 7, ClientID: "a"}, t0.Add(time.Second)) // redelivered
	if at, ok := d.arrival("a"); !ok || !at.Equal(t0) {
		t.Fatalf("arrival %v %v, want the first", at, ok)
	}
	// Order b's DEAL came on a stream without C: it is timed once its order id is known.
	d.record(dealFrame{Kind: "DEAL", Login: 1002, OrderID: 9}, t0.Add(2*time.Second))
	recs := []*orderRec{{coid: "a"}, {coid: "b"}, {coid: "c"}}
	if m := d.missing(recs); len(m) != 2 || m[0].coid != "b" || m[1].coid != "c" {
		t.Fatalf("missing %v", m)
	}
	if d.adopt("b", 1001, 9) {
		t.Fatal("an order id of another login is another order")
	}
	if !d.adopt("b", 1002, 9) || !d.withoutC("b") || d.withoutC("a") {
		t.Fatal("b adopts the DEAL of its order, and is marked as timed without C")
	}
	if at, ok := d.arrival("b"); !ok || !at.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("b arrival %v %v", at, ok)
	}
	if d.adopt("c", 1003, 10) {
		t.Fatal("no DEAL of that order came")
	}
}
