package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"tradesvc/events"
)

// Step is one line of a story's timeline.
type Step struct {
	Name    string
	Attempt int
	At      int64
	Where   string
	Detail  string
	Applied *bool
}

// Steps lays a story out in the order things happened per attempt: received, recorded,
// appended, sent, answered; then the deals that filled it.
func Steps(s Story) []Step {
	var out []Step
	for _, a := range s.Attempts {
		if a.Appended != nil {
			who := ""
			if a.Who != nil {
				who = fmt.Sprintf("api key %d from %s, %s %s", a.Who.APIKeyID, a.Who.SourceAddr, a.Who.Method, a.Who.Path)
			}
			out = append(out, Step{Name: "received", Attempt: a.Attempt, At: a.Received, Where: "gateway", Detail: who},
				Step{Name: "recorded", Attempt: a.Attempt, At: a.Recorded, Where: orDash(a.RecordedBy), Detail: a.Event})
			detail := ""
			if a.Copies > 0 {
				detail = fmt.Sprintf("appended %d more time(s) by retries", a.Copies)
			}
			out = append(out, Step{Name: "appended", Attempt: a.Attempt, At: a.Appended.Timestamp, Where: where(*a.Appended),
				Detail: detail, Applied: a.Appended.Applied})
		}
		if a.Sent != nil {
			out = append(out, Step{Name: "sent", Attempt: a.Attempt, At: a.Sent.At, Where: where(a.Sent.Place),
				Detail: fmt.Sprintf("tag %s (%s)", a.Sent.Tag, a.Sent.Source), Applied: a.Sent.Place.Applied})
		} else if n := len(a.Answers); n > 0 && refusedUnsent(a.Answers[n-1]) {
			out = append(out, Step{Name: "sent", Attempt: a.Attempt, Where: "executor",
				Detail: "not sent: refused before sending (the dispatch window passed)"})
		}
		for _, ans := range a.Answers {
			out = append(out, Step{Name: "answered", Attempt: a.Attempt, At: ans.At, Where: where(ans.Place),
				Detail: answerText(ans), Applied: ans.Place.Applied})
		}
	}
	for _, d := range s.Deals {
		for i, p := range d.Places {
			detail := fmt.Sprintf("deal %d: %s @ %s (order %d, position %d, server time %s)", d.DealID, d.Volume, d.Price,
				d.OrderID, d.PositionID, stamp(d.Time))
			if i > 0 {
				detail = fmt.Sprintf("deal %d again", d.DealID)
			}
			if strings.HasSuffix(p.Topic, events.TopicExecutions().Name) {
				detail += " in band"
			}
			out = append(out, Step{Name: "filled", At: p.Timestamp, Where: where(p), Detail: detail, Applied: p.Applied})
		}
	}
	return out
}

func answerText(a Answer) string {
	parts := []string{a.Status}
	if a.Code != 0 {
		parts = append(parts, fmt.Sprintf("code %d", a.Code))
	}
	if a.Retcode != 0 {
		parts = append(parts, fmt.Sprintf("mt5RetCode %d", a.Retcode))
	} else {
		parts = append(parts, "no in-band answer")
	}
	if a.Unanswered {
		parts = append(parts, "(the trade server took it without answering; its facts settle it)")
	}
	if a.Reconciled {
		parts = append(parts, "(reconciled by tag)")
	}
	if a.OrderID != 0 {
		parts = append(parts, fmt.Sprintf("order %d", a.OrderID))
	}
	if a.DealID != 0 {
		parts = append(parts, fmt.Sprintf("deal %d", a.DealID))
	}
	if a.Msg != "" {
		parts = append(parts, fmt.Sprintf("%q", a.Msg))
	}
	return strings.Join(parts, " ")
}

func where(p Place) string { return fmt.Sprintf("%s/%d@%d", p.Topic, p.Partition, p.Offset) }

func stamp(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// WriteTable prints stories for people: a header line per operation, then its steps, what
// the read model shows, and what is missing.
func WriteTable(w io.Writer, stories []Story) error {
	for i, s := range stories {
		if i > 0 {
			fmt.Fprintln(w)
		}
		state := "complete"
		if !s.Complete {
			state = "INCOMPLETE"
		}
		if s.Void {
			state += ", void (a retry's command, never sent; its client order id's operation answered it)"
		}
		what := strings.Join(strings.Fields(strings.Join([]string{s.Kind, s.Side, s.Type, s.Volume, s.Symbol}, " ")), " ")
		fmt.Fprintf(w, "operation %s: %s (login %d, clientOrderId %s, tag %s) — %s\n", s.OperationID, what, s.Login,
			orDash(s.ClientOrderID), orDash(s.Tag), state)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  step\tattempt\ttime (UTC)\twhere\tdetail\tapplied")
		for _, st := range Steps(s) {
			att := "-"
			if st.Attempt > 0 {
				att = fmt.Sprint(st.Attempt)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", st.Name, att, stamp(st.At), st.Where, st.Detail, appliedText(st.Applied))
		}
		for _, m := range s.Missing {
			fmt.Fprintf(tw, "  MISSING\t\t\t\t%s\t\n", m)
		}
		if rm := s.ReadModel; rm != nil {
			fmt.Fprintf(tw, "  read model\t\t%s\trm.operations\tstatus %s, executed %s, version %d\t\n", stamp(rm.UpdatedAt),
				rm.Status, orDash(rm.ExecutedVolume), rm.Version)
		}
		if len(s.Legs) > 0 {
			fmt.Fprintf(tw, "  legs\t\t\t\t%s\t\n", strings.Join(s.Legs, ", "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func appliedText(a *bool) string {
	switch {
	case a == nil:
		return ""
	case *a:
		return "yes"
	}
	return "not yet"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteJSONLines prints one JSON object per story.
func WriteJSONLines(w io.Writer, stories []Story) error {
	enc := json.NewEncoder(w)
	for _, s := range stories {
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return nil
}
