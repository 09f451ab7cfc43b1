package command

import (
	"testing"

	"tradesvc/events"
)

// A round of single commands' records commits asynchronously (the executor's claim makes them
// durable before anything is sent); a round holding a sweep's record, which no one command
// can restore, waits for the disk.
func TestRecordRoundCommitsAsynchronouslyOnlyForSingleCommands(t *testing.T) {
	one := Record{Envelopes: make([]events.Envelope, 1)}
	sweep := Record{Envelopes: make([]events.Envelope, 3)}
	cases := []struct {
		name  string
		recs  []Record
		tried []int
		want  string
	}{
		{"single commands", []Record{one, one}, []int{0, 1}, asyncCommit},
		{"with a sweep", []Record{one, sweep}, []int{0, 1}, syncCommit},
		{"a sweep not tried (a duplicate in the round)", []Record{one, sweep}, []int{0}, asyncCommit},
		{"a record without its command", []Record{{}}, []int{0}, syncCommit},
	}
	for _, c := range cases {
		if got := roundCommit(c.recs, c.tried); got != c.want {
			t.Errorf("%s: commit %q, want %q", c.name, got, c.want)
		}
	}
}
