package projections

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/testenv"
)

// connectAs opens a connection to pool's database named app in pg_stat_activity.
func connectAs(t *testing.T, ctx context.Context, pool *pgxpool.Pool, app string) *pgx.Conn {
	t.Helper()
	cc, err := pgx.ParseConfig(pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cc.RuntimeParams["application_name"] = app
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// looked waits until g has taken a look that began after the call.
func looked(t *testing.T, g *notifyGate) {
	t.Helper()
	from := g.looks.Load()
	eventually(t, "two more looks", 10*time.Second, func() string {
		if n := g.looks.Load() - from; n < 2 {
			return fmt.Sprintf("%d looks", n)
		}
		return ""
	})
}

// gateSays waits until g's answer to needed is want.
func gateSays(t *testing.T, g *notifyGate, want bool, what string) {
	t.Helper()
	eventually(t, what, 10*time.Second, func() string {
		if got := g.needed(); got != want {
			return fmt.Sprintf("needed() = %v", got)
		}
		return ""
	})
}

// The trading projection NOTIFYs its change rows only while a change feed of another process
// is connected: its own process's feed (OwnFeed) and connections that are not feeds do not
// count, it NOTIFYs until its first look and after it stops looking.
func TestNotifyGateNotifiesOnlyWhileAnotherProcesssFeedListens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := testenv.MigratedPG(t)
	own := connectAs(t, ctx, pool, feedAppName)
	g := newNotifyGate(pool, func() uint32 { return own.PgConn().PID() }, 5*time.Millisecond)
	if g == nil || !g.needed() {
		t.Fatal("a gate that has not looked yet does not NOTIFY")
	}
	connectAs(t, ctx, pool, "psql") // not a feed
	if others, err := g.othersListen(ctx); err != nil || others {
		t.Fatalf("own feed and a psql session: others listen = %v (%v), want false", others, err)
	}

	watchCtx, stopWatch := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); g.watch(watchCtx) }()
	gateSays(t, g, false, "no NOTIFY while only this process's feed listens")

	other := connectAs(t, ctx, pool, feedAppName)
	gateSays(t, g, true, "NOTIFY once another process's feed connected")
	if err := other.Close(ctx); err != nil {
		t.Fatal(err)
	}
	gateSays(t, g, false, "no NOTIFY once it left")

	stopWatch()
	<-done
	if !g.needed() {
		t.Fatal("a gate that stopped looking does not NOTIFY")
	}
}

// Without a feed of its own (a projector apart from the gateways) every feed counts; a gate
// whose connection string names the application cannot tell feeds apart and always NOTIFYs.
func TestNotifyGateWithoutAFeedOfItsOwnOrWithANamedApplication(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := testenv.MigratedPG(t)
	g := newNotifyGate(pool, nil, time.Second)
	if others, err := g.othersListen(ctx); err != nil || others {
		t.Fatalf("no feed connected: others listen = %v (%v), want false", others, err)
	}
	connectAs(t, ctx, pool, feedAppName)
	if others, err := g.othersListen(ctx); err != nil || !others {
		t.Fatalf("a feed connected, none of its own: others listen = %v (%v), want true", others, err)
	}

	named, err := pgxpool.New(ctx, pool.Config().ConnString()+"&application_name=gateway-7")
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close()
	if g := newNotifyGate(named, nil, time.Second); g != nil || !g.needed() {
		t.Fatal("a connection string that names the application still gated the NOTIFYs")
	}
	if g := newNotifyGate(pool, nil, -1); g != nil || !g.needed() {
		t.Fatal("a negative NotifyCheck still gated the NOTIFYs")
	}
}

// Through the projection: a transaction's change rows are announced by NOTIFY only while a
// change feed other than this process's own is connected.
func TestTradingNotifiesItsChangesOnlyWhileAnotherProcesssFeedListens(t *testing.T) {
	var own atomic.Uint32
	e := trSetup(t, func(c *TradingConfig) { c.OwnFeed, c.NotifyCheck = own.Load, 5*time.Millisecond })
	listener := connectAs(t, e.ctx, e.pool, "a listener, not a feed")
	if _, err := listener.Exec(e.ctx, "LISTEN "+ChangesChannel); err != nil {
		t.Fatal(err)
	}
	own.Store(connectAs(t, e.ctx, e.pool, feedAppName).PgConn().PID())
	looked(t, e.proj.notify)
	if e.proj.notify.needed() {
		t.Fatal("the projection NOTIFYs while only its own process's feed listens")
	}

	const login = 5301
	e.command(marketOrder(login, "op-n1", "#N00001", "1", 1))
	e.waitOp("op-n1", "ACCEPTED")
	quiet, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
	n, err := listener.WaitForNotification(quiet)
	cancel()
	if err == nil {
		t.Fatalf("a NOTIFY (%q) while only this process's feed listened", n.Payload)
	}

	connectAs(t, e.ctx, e.pool, feedAppName) // another process's feed
	looked(t, e.proj.notify)
	if !e.proj.notify.needed() {
		t.Fatal("the projection does not NOTIFY while another process's feed listens")
	}
	e.command(marketOrder(login, "op-n2", "#N00002", "1", 1))
	e.waitOp("op-n2", "ACCEPTED")
	wait, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if n, err = listener.WaitForNotification(wait); err != nil {
		t.Fatalf("no NOTIFY of op-n2's rows while another feed listened: %v", err)
	}
	if part, to, ok := peekNotify(n.Payload); !ok || to < 1 {
		t.Fatalf("NOTIFY %q: partition %d, to %d, ok %v", n.Payload, part, to, ok)
	}
}
