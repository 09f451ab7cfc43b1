package streams

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/query"
)

var ctx = context.Background()

// newKey registers an API key (id, public key, scope) and returns a listen key for it.
func (e *userEnv) newKey(t *testing.T, id int64, logins ...int64) (apiKey, listenKey string) {
	t.Helper()
	apiKey = fmt.Sprintf("api-key-%d", id)
	e.keys.set(apiKey, KeyScope{ID: id, Logins: logins})
	lk, err := e.srv.Users().CreateListenKey(ctx, id, apiKey)
	if err != nil {
		t.Fatalf("create listen key: %v", err)
	}
	return apiKey, lk
}

// connect opens the user stream of listenKey and waits until it follows the change feed.
func (e *userEnv) connect(t *testing.T, listenKey string) *client {
	t.Helper()
	before := e.feed.subscribers()
	c := e.dial(t, "/ws/"+listenKey)
	for deadline := time.Now().Add(10 * time.Second); e.feed.subscribers() <= before; {
		if time.Now().After(deadline) {
			t.Fatal("the user stream never subscribed to the change feed")
		}
		time.Sleep(2 * time.Millisecond)
	}
	return c
}

// change is a change-feed row of kind for login, carrying a fact like the projection's.
func change(kind string, login int64) query.Change {
	var f events.Event
	switch kind {
	case query.ChangeDeal:
		f = &events.DealAdded{Fact: events.Fact{Login: login}, DealID: 7, Symbol: "EURUSD", Volume: dec.MustParse("0.1"),
			Price: dec.MustParse("1.1"), Comment: "c#000001", Time: 1000}
	case query.ChangeOrderUpdate:
		f = &events.OrderChanged{Fact: events.Fact{Login: login}, Change: "NEW", OrderID: 8, Symbol: "EURUSD", Type: 2, State: 1,
			VolumeInitial: dec.MustParse("0.1"), VolumeCurrent: dec.MustParse("0.1"), Price: dec.MustParse("1.05"), Time: 1000}
	case query.ChangePositionUpdate:
		f = &events.PositionChanged{Fact: events.Fact{Login: login}, Change: "NEW", PositionID: 9, Symbol: "EURUSD",
			Volume: dec.MustParse("0.1"), PriceOpen: dec.MustParse("1.1"), Time: 1000}
	case query.ChangeAccountUpdate:
		f = &events.AccountChanged{Fact: events.Fact{Login: login}, Change: "UPDATE", Balance: dec.MustParse("100"), Time: 1000}
	}
	return query.Change{Login: login, Kind: kind, Fact: f}
}

// owned is c as the operation of clientOrderID by key apiKeyID caused it.
func owned(c query.Change, apiKeyID int64, clientOrderID string) query.Change {
	c.APIKeyID, c.ClientOrderID = apiKeyID, clientOrderID
	return c
}

func wantRejection(t *testing.T, err error, code events.Code) {
	t.Helper()
	rej, ok := err.(*events.Rejection)
	if !ok || rej.Code != code {
		t.Fatalf("error %v, want code %d", err, code)
	}
}

func TestListenKeyLifecycleOneActiveKeyPerAPIKey(t *testing.T) {
	e := startUsers(t, Config{})
	u := e.srv.Users()
	_, lk := e.newKey(t, 1, 1001)
	if !validListenKey(lk) || strings.Contains(lk, "@") {
		t.Fatalf("listen key %q: want 64 letters and digits", lk)
	}
	if again, _ := u.CreateListenKey(ctx, 1, "api-key-1"); again != lk {
		t.Fatalf("POST while active gave %q, want the active %q", again, lk)
	}
	if other, _ := u.CreateListenKey(ctx, 2, "api-key-2"); other == lk {
		t.Fatal("another API key got the same listen key")
	}
	if err := u.ExtendListenKey(ctx, 1, ""); err != nil {
		t.Fatalf("PUT without listenKey: %v", err)
	}
	if err := u.ExtendListenKey(ctx, 1, lk); err != nil {
		t.Fatalf("PUT with the active key: %v", err)
	}
	other, _ := u.CreateListenKey(ctx, 2, "api-key-2")
	wantRejection(t, u.ExtendListenKey(ctx, 1, other), events.CodeInvalidListenKey) // another API key's
	wantRejection(t, u.ExtendListenKey(ctx, 1, "not-a-key"), events.CodeInvalidListenKey)
	if err := u.DeleteListenKey(ctx, 1, lk); err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	wantRejection(t, u.ExtendListenKey(ctx, 1, lk), events.CodeInvalidListenKey)
	wantRejection(t, u.ExtendListenKey(ctx, 1, ""), events.CodeInvalidListenKey)
	wantRejection(t, u.DeleteListenKey(ctx, 1, lk), events.CodeInvalidListenKey)
	if fresh, _ := u.CreateListenKey(ctx, 1, "api-key-1"); fresh == lk || !validListenKey(fresh) {
		t.Fatalf("POST after DELETE gave %q, want a new key", fresh)
	}
}

func TestUserStreamDeliversTheKeysLoginsAndCOnlyToTheKeyOwningTheOrder(t *testing.T) {
	e := startUsers(t, Config{})
	_, lk1 := e.newKey(t, 1, 1001, 1002)
	_, lk2 := e.newKey(t, 2, 1001)
	c1, c2 := e.connect(t, lk1), e.connect(t, lk2)
	e.feed.publish(owned(query.Change{Login: 1001, Kind: "OPERATION"}, 1, "x"))
	e.feed.publish(owned(change("DEAL", 1001), 1, "order-1"))
	e.feed.publish(owned(change("ORDER_UPDATE", 1001), 1, "order-1"))
	e.feed.publish(owned(change("POSITION_UPDATE", 1001), 1, "order-1"))
	e.feed.publish(change("ACCOUNT_UPDATE", 9999))
	e.feed.publish(change("ACCOUNT_UPDATE", 1002))
	e.feed.publish(change("ACCOUNT_UPDATE", 1001))
	deal := `{"e":"DEAL","E":1000,"L":1001,"d":7,"o":0,"P":0,"s":"EURUSD","S":"BUY","en":"IN","q":"0.1","p":"1.10000",` +
		`"rp":"0.0000","n":"0.0000","sw":"0.0000","c":"c#000001","T":1000`
	order := `{"e":"ORDER_UPDATE","E":1000,"L":1001,"x":"NEW","o":8,"s":"EURUSD","ot":"BUY_LIMIT","X":"NEW","mst":1,` +
		`"q":"0.1","qr":"0.1","p":"1.05000","sp":"0","sl":"0","tp":"0","tif":"GTC","ts":0,"ex":0`
	position := `{"e":"POSITION_UPDATE","E":1000,"L":1001,"x":"NEW","i":9,"s":"EURUSD","S":"BUY","q":"0.1","p":"1.10000",` +
		`"sl":"0","tp":"0","pr":"0.0000","sw":"0.0000","c":"","T":0}`
	account := func(login string) string {
		return `{"e":"ACCOUNT_UPDATE","E":1000,"L":` + login + `,"x":"UPDATE","b":"100.0000","cr":"0.0000"}`
	}
	want1 := []string{deal + `,"C":"order-1"}`, order + `,"C":"order-1"}`, position, account("1002"), account("1001")}
	want2 := []string{deal + "}", order + "}", position, account("1001")}
	for name, tc := range map[string]struct {
		c    *client
		want []string
	}{"owner": {c1, want1}, "other key": {c2, want2}} {
		for i, w := range tc.want {
			_ = tc.c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, got, err := tc.c.ws.ReadMessage()
			if err != nil || string(got) != w {
				t.Fatalf("%s frame %d = %s (%v), want %s", name, i, got, err, w)
			}
		}
	}
}

func TestUserStreamFollowsTheKeysScopeAndClosesWhenNothingRemains(t *testing.T) {
	e := startUsers(t, Config{UserRecheck: 20 * time.Millisecond})
	apiKey, lk := e.newKey(t, 1, 1001, 1002)
	c := e.connect(t, lk)
	e.keys.set(apiKey, KeyScope{ID: 1, Logins: []int64{1002}})
	// Wait until the stream re-read the scope (the package test can look inside).
	for deadline := time.Now().Add(10 * time.Second); ; {
		e.srv.users.mu.Lock()
		var narrowed bool
		for uc := range e.srv.users.open[lk] {
			narrowed = !uc.inScope(1001)
		}
		e.srv.users.mu.Unlock()
		if narrowed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream never narrowed its scope")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.feed.publish(change("ACCOUNT_UPDATE", 1001))
	e.feed.publish(change("ACCOUNT_UPDATE", 1002))
	if m := c.next(); string(m["L"]) != "1002" {
		t.Fatalf("first frame after the scope change is for login %s, want 1002 (1001 left the scope)", m["L"])
	}
	e.keys.set(apiKey, KeyScope{ID: 1})
	if code, reason, _ := c.closed(10 * time.Second); code != websocket.CloseNormalClosure || reason != "no login in scope" {
		t.Fatalf("closed with %d %q", code, reason)
	}
}

func TestALaggingUserStreamIsClosedWith1011(t *testing.T) {
	e := startUsers(t, Config{UserBuffer: 4, WriteTimeout: time.Minute})
	_, lk := e.newKey(t, 1, 1001)
	before := e.feed.subscribers()
	slow := e.dialWith(t, dialer("", 4096), "/ws/"+lk)
	for e.feed.subscribers() <= before {
		time.Sleep(2 * time.Millisecond)
	}
	for i := 0; i < 5000 && e.feed.subscribers() > before; i++ {
		e.feed.publish(change("ACCOUNT_UPDATE", 1001))
	}
	code, reason, frames := slow.closed(time.Minute)
	if code != websocket.CloseInternalServerErr || !strings.Contains(reason, "resnapshot") {
		t.Fatalf("closed with %d %q after %d frames", code, reason, len(frames))
	}
}

func TestListenKeyExpiryEndsTheStreamWithListenKeyExpiredThen1000(t *testing.T) {
	e := startUsers(t, Config{ListenKeyLifetime: 300 * time.Millisecond, UserRecheck: time.Hour})
	_, lk := e.newKey(t, 1, 1001)
	c := e.connect(t, lk)
	code, reason, frames := c.closed(10 * time.Second)
	if code != websocket.CloseNormalClosure || reason != "listen key expired" || len(frames) != 1 {
		t.Fatalf("closed with %d %q after frames %q", code, reason, frames)
	}
	var m struct {
		E         string `json:"e"`
		T         int64  `json:"E"`
		ListenKey string `json:"listenKey"`
	}
	if err := json.Unmarshal(frames[0], &m); err != nil || m.E != "listenKeyExpired" || m.ListenKey != lk || m.T <= 0 {
		t.Fatalf("last frame %s", frames[0])
	}
	// An expired key is not the active one any more.
	wantRejection(t, e.srv.Users().ExtendListenKey(ctx, 1, lk), events.CodeInvalidListenKey)
	if status, code := e.refused(t, dialer("", 0), "/ws/"+lk); status != http.StatusBadRequest || code != -1125 {
		t.Fatalf("reconnect with the expired key: %d %d, want 400 -1125", status, code)
	}
}

func TestKeepaliveMovesTheExpiryOfAnOpenStream(t *testing.T) {
	e := startUsers(t, Config{ListenKeyLifetime: 400 * time.Millisecond, UserRecheck: time.Hour})
	_, lk := e.newKey(t, 1, 1001)
	c := e.connect(t, lk)
	stop := time.Now().Add(1200 * time.Millisecond) // three lifetimes, kept alive
	for time.Now().Before(stop) {
		if err := e.srv.Users().ExtendListenKey(ctx, 1, lk); err != nil {
			t.Fatalf("PUT: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.feed.publish(change("ACCOUNT_UPDATE", 1001))
	if m := c.next(); string(m["e"]) != `"ACCOUNT_UPDATE"` {
		t.Fatalf("a kept-alive stream got %v", m)
	}
	if code, reason, _ := c.closed(10 * time.Second); code != websocket.CloseNormalClosure || reason != "listen key expired" {
		t.Fatalf("after the keepalives stopped: %d %q", code, reason)
	}
}

func TestDeleteClosesTheListenKeysSocketAtOnce(t *testing.T) {
	e := startUsers(t, Config{UserRecheck: time.Hour})
	_, lk := e.newKey(t, 1, 1001)
	c := e.connect(t, lk)
	if err := e.srv.Users().DeleteListenKey(ctx, 1, ""); err != nil {
		t.Fatal(err)
	}
	if code, reason, _ := c.closed(10 * time.Second); code != websocket.CloseNormalClosure || reason != "listen key deleted" {
		t.Fatalf("closed with %d %q", code, reason)
	}
}

func TestTradingSwitchedOffRefusesUserStreamsAndClosesOpenOnes(t *testing.T) {
	e := startUsers(t, Config{UserRecheck: 20 * time.Millisecond})
	_, lk := e.newKey(t, 1, 1001)
	c := e.connect(t, lk)
	e.switches.off.Store(true)
	code, reason, frames := c.closed(10 * time.Second)
	if code != websocket.CloseTryAgainLater || reason != "trading switched off" || len(frames) != 1 ||
		!strings.HasPrefix(string(frames[0]), `{"code":-1017,"msg":`) {
		t.Fatalf("open stream: %d %q after %q", code, reason, frames)
	}
	if status, code := e.refused(t, dialer("", 0), "/ws/"+lk); status != http.StatusServiceUnavailable || code != -1017 {
		t.Fatalf("upgrade while off: %d %d, want 503 -1017", status, code)
	}
}

func TestRevokingTheAPIKeyClosesItsUserStream(t *testing.T) {
	e := startUsers(t, Config{UserRecheck: 20 * time.Millisecond})
	apiKey, lk := e.newKey(t, 1, 1001)
	c := e.connect(t, lk)
	e.keys.set(apiKey, KeyScope{ID: 1, Logins: []int64{1001}, Revoked: true})
	code, reason, frames := c.closed(10 * time.Second)
	if code != websocket.CloseNormalClosure || reason != "api key revoked" || len(frames) != 1 ||
		!strings.HasPrefix(string(frames[0]), `{"code":-2015,`) {
		t.Fatalf("closed with %d %q after %q", code, reason, frames)
	}
}

func TestUnknownListenKeysAreRefusedBeforeTheUpgrade(t *testing.T) {
	e := startUsers(t, Config{})
	for _, k := range []string{strings.Repeat("A", 64), "short", strings.Repeat("A", 63) + "-"} {
		if status, code := e.refused(t, dialer("", 0), "/ws/"+k); status != http.StatusBadRequest || code != -1125 {
			t.Errorf("/ws/%s: %d %d, want 400 -1125", k, status, code)
		}
	}
}
