package projections

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka/batch"
)

// A fresh batch starts every operation it touches (each one's command is applied by this very
// transaction: the command an outcome carries in band, a command the command topic's consumer
// hands in first), and every fact it carries is new to the read models. Everything the
// derivation would read back after the first pipeline (the operation's row, the deals of its
// tag, the order its outcome names) is then in the batch itself. So the transaction derives
// in memory and sends all of it, derived columns and change rows included, in one pipeline
// with its COMMIT: one round trip instead of two, and none of the reads. That is the path of
// nearly every order: a RESULT is answered when this transaction commits.
//
// What "fresh" assumes of the stored rows is checked in the pipeline itself, after the logins'
// locks: the operations and the deals go in by plain inserts, which a row stored already fails
// (a unique violation); a fence (rm.fence, migration 0118) checks the rest: no stored deal of
// the operations' tags, no stored order, position or balance at or past the batch's sequence,
// no stored operation naming one of the outcomes' orders. A copy applied by another process or
// before a restart fails one or the other; the transaction rolls back and the batch takes the
// two-pipeline path (apply), which reads what is stored.

// fenceFresh is the SQLSTATE of a fresh batch's failed fence.
const fenceFresh = "TSF01"

// uniqueViolation is Postgres' SQLSTATE of an insert that found its row stored (the fence of
// a fresh batch's operations and deals: insertedNew).
const uniqueViolation = "23505"

// errNotFresh: the fence found stored rows that a fresh batch assumed absent.
var errNotFresh = errors.New("projections: the batch is not fresh after all")

// freshBatch is a fresh batch's derivation inputs and its fence's arguments.
type freshBatch struct {
	ops    []*loadedOp
	owners map[loginTag]tagOwner

	tagLogins               []int64
	tags                    []string
	outOrders               []int64
	orders, orderSeqs       []int64 // each order of the batch, its lowest seq in it
	positions, positionSeqs []int64
	accounts, accountSeqs   []int64
}

// freshOp is an operation a fresh batch starts, while it is planned.
type freshOp struct {
	*loadedOp
	deals []*events.DealAdded
}

// planFresh reports whether items make a fresh batch (see above), and if so derives what the
// first pipeline would have read: each operation's inputs as its new row holds them, whether
// each item changes a row (it.applied, which the change rows need before the pipeline runs),
// and the owners of its facts' tags. It changes items only when it returns ok.
func (t *Trading) planFresh(items []*tradingItem) (*freshBatch, bool) {
	byID := map[string]*freshOp{}
	byTag := map[loginTag]*freshOp{}
	byOrder := map[int64]*freshOp{}
	fb := &freshBatch{owners: map[loginTag]tagOwner{}}
	var ops []*freshOp
	for _, it := range items { // the commands: each starts its operation's row
		r, ok := trading.RequestOf(it.ev)
		if !ok {
			continue
		}
		k := loginTag{r.Login, r.Tag}
		if _, dup := byID[r.OperationID]; dup || byTag[k] != nil {
			return nil, false
		}
		// An operation on a stored order or position, or without a symbol of its own, derives
		// from rows the batch does not hold.
		if r.TargetOrderID != 0 || r.TargetPositionID != 0 || r.SweepID != "" || r.Symbol == "" {
			return nil, false
		}
		if _, ok := t.digits.get(r.Symbol); !ok {
			return nil, false
		}
		o := &freshOp{loadedOp: &loadedOp{id: r.OperationID, login: r.Login, symbol: r.Symbol,
			in:     trading.Inputs{Kind: r.Kind, Type: r.Type, Volume: r.Volume, Attempt: r.Attempt, RequestedAt: r.RequestedAt},
			stored: trading.Derived{Status: trading.StatusAccepted}}}
		byID[r.OperationID], byTag[k] = o, o
		ops = append(ops, o)
		fb.owners[k] = ownerOf(r)
		fb.tagLogins, fb.tags = append(fb.tagLogins, r.Login), append(fb.tags, r.Tag)
	}
	if len(ops) == 0 {
		return nil, false
	}
	for _, it := range items { // the outcomes: folded into their operation's row
		out, ok := it.ev.(*events.ExecutionOutcome)
		if !ok {
			if it.table == nil {
				return nil, false // a statement of its own
			}
			continue
		}
		o := byID[out.OperationID]
		if !it.folded || o == nil || o.out != nil {
			return nil, false
		}
		folded := trading.OutcomeOf(out)
		o.in.Out, o.out = &folded, out
		if out.OrderID != 0 {
			if byOrder[out.OrderID] != nil {
				return nil, false
			}
			byOrder[out.OrderID] = o
			fb.outOrders = append(fb.outOrders, out.OrderID)
		}
	}
	applied := make([]bool, len(items))
	newest := map[int64]*events.OrderChanged{} // order id → its newest fact in the batch
	orders, positions, accounts := forwardKeys{}, forwardKeys{}, forwardKeys{}
	dealSeen := map[int64]bool{}
	for i, it := range items { // the facts: which of them change a row, whose they are
		if k, ok := ownedFact(it.ev); ok && fb.owners[k] == (tagOwner{}) {
			return nil, false // a fact of an operation the batch does not start
		}
		switch x := it.ev.(type) {
		case *events.DealAdded:
			applied[i] = !dealSeen[x.DealID]
			dealSeen[x.DealID] = true
			if tag := trading.TagOf(x.Comment); tag != "" && trading.DealAction(x.Action).IsTrade() {
				o := byTag[loginTag{x.Login, tag}]
				if o == nil {
					return nil, false
				}
				if applied[i] {
					o.deals = append(o.deals, x)
				}
			}
		case *events.OrderChanged:
			if o := byOrder[x.OrderID]; o == nil || o.login != x.Login {
				return nil, false // an order no outcome of the batch names
			}
			applied[i] = orders.add(x.OrderID, x.Seq)
			if n := newest[x.OrderID]; n == nil || x.Seq > n.Seq {
				newest[x.OrderID] = x
			}
		case *events.PositionChanged:
			if x.Change == events.ChangeClose {
				return nil, false // it may settle a stored close
			}
			applied[i] = positions.add(x.PositionID, x.Seq)
		case *events.AccountChanged:
			applied[i] = accounts.add(x.Login, x.Seq)
		case *events.ExecutionOutcome:
			applied[i] = true // folded (above)
		default:
			if it.table != commandTable {
				return nil, false
			}
			applied[i] = true // unique in the batch (above), and its row is new
		}
	}
	for _, o := range ops {
		if out := o.out; out != nil && out.OrderID != 0 {
			x := newest[out.OrderID]
			if x == nil {
				return nil, false // the order's state is stored, or still to come
			}
			o.in.Order = &trading.PendingOrder{Open: x.Change != events.ChangeDelete, State: trading.OrderState(x.State),
				UpdateTime: x.Time}
		}
		slices.SortFunc(o.deals, func(a, b *events.DealAdded) int { return cmp.Compare(a.DealID, b.DealID) })
		for _, d := range o.deals {
			o.in.Fills.Add(d.DealID, d.OrderID, d.PositionID, d.Volume, d.Price, d.Time)
		}
		fb.ops = append(fb.ops, o.loadedOp)
	}
	fb.orders, fb.orderSeqs = orders.lowest()
	fb.positions, fb.positionSeqs = positions.lowest()
	fb.accounts, fb.accountSeqs = accounts.lowest()
	for i, it := range items {
		it.applied = applied[i]
	}
	return fb, true
}

// freshDone tells Fresh of a batch planned as fresh.
func (t *Trading) freshDone(fenced bool) {
	if t.cfg.Fresh != nil {
		t.cfg.Fresh(fenced)
	}
}

// forwardKeys tracks the facts of one forward table in a batch, per key.
type forwardKeys map[int64]*forwardSeqs

// forwardSeqs are the newest seq of a key's facts so far (a fact changes the row only past it)
// and the lowest (the fence: nothing stored at or past it).
type forwardSeqs struct{ newest, lowest uint64 }

// add reports whether a fact of key at seq changes the row, the stored row being older than
// every fact of the batch (the fence).
func (f forwardKeys) add(key int64, seq uint64) bool {
	s := f[key]
	if s == nil {
		f[key] = &forwardSeqs{newest: seq, lowest: seq}
		return true
	}
	s.lowest = min(s.lowest, seq)
	if seq <= s.newest {
		return false
	}
	s.newest = seq
	return true
}

// lowest returns the keys and the lowest seq of each, for the fence.
func (f forwardKeys) lowest() (keys, seqs []int64) {
	for k, s := range f {
		keys, seqs = append(keys, k), append(seqs, int64(s.lowest))
	}
	return keys, seqs
}

// freshFenceSQL fails the transaction (SQLSTATE fenceFresh) unless the stored rows are as a
// fresh batch assumes of them besides what its inserts check themselves (queueFreshItems): no
// deal of its operations' tags, no operation naming one of its outcomes' orders, and no
// order, position or balance stored at or past the lowest seq the batch holds for it. Every
// clause is a lookup by key.
const freshFenceSQL = `SELECT rm.fence(
	NOT EXISTS (SELECT 1 FROM unnest($1::bigint[], $2::text[]) AS x(l, t)
		JOIN rm.deals d ON d.login = x.l AND d.tag = x.t)
	AND NOT EXISTS (SELECT 1 FROM rm.operations WHERE out_order_id = ANY($3))
	AND NOT EXISTS (SELECT 1 FROM unnest($4::bigint[], $5::bigint[]) AS x(k, s)
		JOIN rm.orders r ON r.order_id = x.k WHERE r.seq >= x.s)
	AND NOT EXISTS (SELECT 1 FROM unnest($6::bigint[], $7::bigint[]) AS x(k, s)
		JOIN rm.positions p ON p.position_id = x.k WHERE p.seq >= x.s)
	AND NOT EXISTS (SELECT 1 FROM unnest($8::bigint[], $9::bigint[]) AS x(k, s)
		JOIN rm.account_balances a ON a.login = x.k WHERE a.seq >= x.s),
	'` + fenceFresh + `', 'the batch is not fresh: the read models hold some of it already')`

// insertedNew are the tables whose rows a fresh batch inserts as new (factTable.insert): its
// operations (their commands) and its deals. A row stored already, by id or by (login, tag),
// fails the insert with a unique violation: the insert is the fence of those.
var insertedNew = map[*factTable]bool{commandTable: true, factTables[(*events.DealAdded)(nil).EventType()]: true}

// applyFresh applies a fresh batch in one pipelined transaction: the positions' check and
// advance, the logins' locks, the fence, the facts and commands, the derived columns with the
// outcomes folded in, the change feed, COMMIT. A failed fence is errNotFresh (nothing
// committed, nothing in memory changed but items' applied flags).
func (t *Trading) applyFresh(ctx context.Context, msgs []batch.Message, items []*tradingItem, logins []int64,
	fb *freshBatch) (*advance, map[int32][]changeRow, error) {
	var adv *advance
	var rows map[int32][]changeRow
	err := t.inPipeTx(ctx, func(tx *pipeTx) error {
		var err error
		if _, adv, err = t.positions.plan(ctx, tx, msgs); err != nil {
			return err
		}
		b := &pgx.Batch{}
		t.positions.queue(b, adv, true)
		queueLocks(b, logins)
		b.Queue(freshFenceSQL, fb.tagLogins, fb.tags, fb.outOrders, fb.orders, fb.orderSeqs,
			fb.positions, fb.positionSeqs, fb.accounts, fb.accountSeqs)
		changes, writes := t.derive(fb.ops)
		queueItems(b, items, true, writes)
		if rows, err = t.queueChanges(b, items, fb.owners, changes); err != nil {
			return err
		}
		return tx.commit(ctx, b)
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case fenceFresh, uniqueViolation:
			return adv, nil, errNotFresh
		case fencePositions:
			return adv, nil, errPositionsMoved
		}
	}
	return adv, rows, err
}
