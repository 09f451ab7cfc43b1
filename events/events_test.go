package events

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"tradesvc/events/dec"
)

func TestEveryEventRoundTripsWithDecimalsAsStrings(t *testing.T) {
	price := dec.MustParse("1.10005")
	cases := []Event{
		&OrderRequested{Operation: Operation{OperationID: "op1", Login: 1001, ClientOrderID: "c1", Tag: "AbC1234"},
			Symbol: "EURUSD", Side: "BUY", Type: "MARKET", Volume: dec.MustParse("0.10"),
			OrderPrices: OrderPrices{Price: &price}},
		&DealAdded{Fact: Fact{Seq: 7, Login: 1001}, DealID: 9007199254740993, Volume: dec.MustParse("0.10"), Price: price,
			Profit: dec.MustParse("-1.25"), Commission: dec.MustParse("-0.70"), Swap: dec.MustParse("0")},
		&TickReceived{Seq: 1, Symbol: "EURUSD", Bid: price, Ask: dec.MustParse("1.10017"), Last: dec.MustParse("0")},
		&AccountSnapshot{AccountHeader: AccountHeader{Login: 1004, Currency: "USC"}, Balance: dec.MustParse("1000000.00")},
	}
	for _, e := range cases {
		env, err := Wrap(e, time.UnixMilli(1700000000000), "corr", "", "test")
		if err != nil {
			t.Fatal(err)
		}
		raw, err := env.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var generic map[string]any
		if err := json.Unmarshal(raw, &generic); err != nil {
			t.Fatal(err)
		}
		payload := generic["payload"].(map[string]any)
		decimalFields := []string{"price", "bid", "balance"}
		if _, isTick := e.(*TickReceived); !isTick { // a tick's volume is an integer count
			decimalFields = append(decimalFields, "volume")
		}
		for _, field := range decimalFields {
			if v, ok := payload[field]; ok {
				if _, isString := v.(string); !isString {
					t.Errorf("%s.%s encoded as %T, want a JSON string", e.EventType(), field, v)
				}
			}
		}
		back, err := UnmarshalEnvelope(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(back)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(got)
		if string(again) != string(env.Payload) {
			t.Errorf("%s round trip changed payload:\n %s\n %s", e.EventType(), env.Payload, again)
		}
		if back.Key != e.PartitionKey() || back.Type != e.EventType() || back.OccurredAt != 1700000000000 {
			t.Errorf("envelope fields lost: %+v", back)
		}
	}
}

func TestTicketsBeyondDoublePrecisionSurvive(t *testing.T) {
	e := &DealAdded{DealID: 9007199254740993, Volume: dec.MustParse("1")}
	env, _ := Wrap(e, time.Now(), "", "", "")
	if !strings.Contains(string(env.Payload), "9007199254740993") {
		t.Fatalf("ticket mangled: %s", env.Payload)
	}
	got, err := Decode(env)
	if err != nil || got.(*DealAdded).DealID != 9007199254740993 {
		t.Fatalf("decode: %v %+v", err, got)
	}
}

func TestDecodeUnknownTypeIsSkippable(t *testing.T) {
	_, err := Decode(Envelope{ID: "x", Type: "SomethingNew_v9", Payload: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "unknown event type") {
		t.Fatalf("want ErrUnknownType, got %v", err)
	}
}

func TestEveryTopicHasAPositivePartitionCount(t *testing.T) {
	seen := map[string]bool{}
	for _, tp := range Topics() {
		if tp.Partitions <= 0 || tp.Name == "" || seen[tp.Name] {
			t.Errorf("bad topic %+v", tp)
		}
		seen[tp.Name] = true
	}
}

func TestDecodeRefusesNonFiniteDecimals(t *testing.T) {
	env, err := Wrap(&TickReceived{Symbol: "EURUSD", Bid: dec.MustParse("1.1"), Ask: dec.MustParse("1.2")}, time.Now(), "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(env); err != nil {
		t.Fatalf("a finite tick: %v", err)
	}
	for _, bad := range []string{"NaN", "Infinity", "-Infinity"} {
		env.Payload = json.RawMessage(`{"symbol":"EURUSD","bid":"1.1","ask":"` + bad + `","last":"0"}`)
		if _, err := Decode(env); err == nil || !strings.Contains(err.Error(), "Ask") {
			t.Errorf("a tick with ask %s decoded: %v", bad, err)
		}
	}
	// Optional decimals behind pointers are checked too.
	cmd, err := Wrap(&OrderRequested{}, time.Now(), "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Payload = json.RawMessage(`{"price":"NaN"}`)
	if _, err := Decode(cmd); err == nil {
		t.Error("an order request with price NaN decoded")
	}
}

// The fast path of the finite check skips only payloads that cannot spell a non-finite
// decimal; a NaN or an infinity in any case is still refused.
func TestDecodeRefusesNonFiniteDecimalsWhateverTheirCase(t *testing.T) {
	for _, v := range []string{"NaN", "nan", "sNaN", "Infinity", "-Infinity", "inf", "-INF"} {
		env := Envelope{ID: "x", Type: "DealAdded_v1", Payload: []byte(`{"seq":1,"login":1,"volume":"` + v + `","price":"1"}`)}
		if _, err := Decode(env); err == nil {
			t.Errorf("volume %q decoded", v)
		}
	}
	if mayHoldNonFinite([]byte(`{"seq":1,"login":1,"volume":"0.01","price":"1.10005"}`)) {
		t.Error("a payload of finite decimals takes the slow path")
	}
	env := Envelope{ID: "x", Type: "DealAdded_v1", Payload: []byte(`{"seq":1,"login":1,"volume":"0.01","price":"1","comment":"info"}`)}
	if _, err := Decode(env); err != nil {
		t.Errorf("a finite payload whose text spells inf: %v", err)
	}
}
