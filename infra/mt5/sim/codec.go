package sim

import (
	"strconv"

	"github.com/cockroachdb/apd/v3"
)

// appendRecord writes rec as one JSON line, by hand: encoding/json's reflection was a fifth
// of the CPU of a market order. The output is what encoding/json would write for the same
// record minus zero-valued fields, so replay decodes it with encoding/json unchanged.
func appendRecord(b []byte, rec *record) []byte {
	if m := rec.Meta; m != nil {
		b = append(b, `{"m":{"rolloverDay":`...)
		b = strconv.AppendInt(b, m.RolloverDay, 10)
		return append(b, "}}\n"...)
	}
	f := rec.Fact
	b = append(b, `{"f":{"Seq":`...)
	b = strconv.AppendUint(b, f.Seq, 10)
	w := jw{b: b}
	w.int("Kind", int64(f.Kind))
	w.int("Login", f.Login)
	w.int("Time", f.Time)
	w.int("Action", int64(f.Action))
	switch {
	case f.Deal != nil:
		w.obj("Deal")
		d := f.Deal
		w.intFirst("Ticket", d.Ticket)
		w.int("Login", d.Login)
		w.int("Order", d.Order)
		w.int("Position", d.Position)
		w.str("Symbol", d.Symbol)
		w.int("Action", int64(d.Action))
		w.int("Entry", int64(d.Entry))
		w.int("Reason", int64(d.Reason))
		w.dec("Volume", &d.Volume)
		w.dec("Price", &d.Price)
		w.dec("Profit", &d.Profit)
		w.dec("Commission", &d.Commission)
		w.dec("Swap", &d.Swap)
		w.str("Comment", d.Comment)
		w.int("Time", d.Time)
	case f.Order != nil:
		w.obj("Order")
		o := f.Order
		w.intFirst("Ticket", o.Ticket)
		w.int("Login", o.Login)
		w.str("Symbol", o.Symbol)
		w.int("Type", int64(o.Type))
		w.int("State", int64(o.State))
		w.int("TypeTime", int64(o.TypeTime))
		w.int("Filling", int64(o.Filling))
		w.int("Expiration", o.Expiration)
		w.dec("VolumeInitial", &o.VolumeInitial)
		w.dec("VolumeCurrent", &o.VolumeCurrent)
		w.dec("Price", &o.Price)
		w.dec("StopLimit", &o.StopLimit)
		w.dec("SL", &o.SL)
		w.dec("TP", &o.TP)
		w.int("PositionID", o.PositionID)
		w.int("Reason", int64(o.Reason))
		w.str("Comment", o.Comment)
		w.int("TimeSetup", o.TimeSetup)
		w.int("TimeDone", o.TimeDone)
		w.int("TimeUpdate", o.TimeUpdate)
	case f.Position != nil:
		w.obj("Position")
		p := f.Position
		w.intFirst("Ticket", p.Ticket)
		w.int("Login", p.Login)
		w.str("Symbol", p.Symbol)
		w.int("Type", int64(p.Type))
		w.dec("Volume", &p.Volume)
		w.dec("PriceOpen", &p.PriceOpen)
		w.dec("PriceCurrent", &p.PriceCurrent)
		w.dec("SL", &p.SL)
		w.dec("TP", &p.TP)
		w.dec("Profit", &p.Profit)
		w.dec("Swap", &p.Swap)
		w.int("Reason", int64(p.Reason))
		w.str("Comment", p.Comment)
		w.int("TimeCreate", p.TimeCreate)
		w.int("TimeUpdate", p.TimeUpdate)
	case f.Account != nil:
		w.obj("Account")
		a := f.Account
		w.intFirst("Login", a.Login)
		w.str("Group", a.Group)
		w.str("Currency", a.Currency)
		w.int("Leverage", int64(a.Leverage))
		w.bool("Demo", a.Demo)
		w.bool("TradeAllowed", a.TradeAllowed)
		w.dec("Balance", &a.Balance)
		w.dec("Credit", &a.Credit)
		w.dec("Equity", &a.Equity)
		w.dec("Margin", &a.Margin)
		w.dec("MarginFree", &a.MarginFree)
		w.dec("MarginLevel", &a.MarginLevel)
		w.dec("Profit", &a.Profit)
		w.int("UpdateTime", a.UpdateTime)
	}
	b = w.b
	if f.Deal != nil || f.Order != nil || f.Position != nil || f.Account != nil {
		b = append(b, '}')
	}
	return append(b, "}}\n"...)
}

type jw struct{ b []byte }

func (w *jw) key(k string) {
	w.b = append(w.b, ',', '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *jw) obj(k string) { w.key(k); w.b = append(w.b, '{') }

// intFirst writes the first field of an object (no leading comma).
func (w *jw) intFirst(k string, v int64) {
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *jw) int(k string, v int64) {
	if v == 0 {
		return
	}
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *jw) bool(k string, v bool) {
	if !v {
		return
	}
	w.key(k)
	w.b = append(w.b, "true"...)
}

func (w *jw) dec(k string, d *apd.Decimal) {
	if d.IsZero() && d.Exponent == 0 && !d.Negative {
		return
	}
	w.key(k)
	w.b = append(w.b, '"')
	w.b = d.Append(w.b, 'f')
	w.b = append(w.b, '"')
}

func (w *jw) str(k, s string) {
	if s == "" {
		return
	}
	w.key(k)
	w.b = append(w.b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			w.b = append(w.b, '\\', c)
		case c < 0x20:
			w.b = append(w.b, `\u00`...)
			w.b = append(w.b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			w.b = append(w.b, c)
		}
	}
	w.b = append(w.b, '"')
}
