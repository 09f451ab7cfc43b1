package streams

import (
	"encoding/json"
	"testing"

	"tradesvc/events"
)

func TestParseControlAcceptsTheThreeMethods(t *testing.T) {
	c, err := parseControl([]byte(` {"method":"SUBSCRIBE","params":["BTCUSD@tick","ETHUSD@ticker"],"id":18446744073709551615}`))
	if err != nil || c.method != methodSubscribe || len(c.params) != 2 || c.id != 18446744073709551615 {
		t.Fatalf("subscribe: %+v %+v", c, err)
	}
	c, err = parseControl([]byte(`{"method":"UNSUBSCRIBE","params":["BTCUSD@tick"],"id":0}`))
	if err != nil || c.method != methodUnsubscribe || c.id != 0 {
		t.Fatalf("unsubscribe: %+v %+v", c, err)
	}
	c, err = parseControl([]byte(`{"method":"LIST_SUBSCRIPTIONS","id":7}`))
	if err != nil || c.method != methodList || c.id != 7 {
		t.Fatalf("list: %+v %+v", c, err)
	}
}

// Every row of the spec's control-frame error table, with the id echoed or null.
func TestParseControlRefusesEachMalformedFrameWithTheSpecCode(t *testing.T) {
	cases := []struct {
		frame string
		code  events.Code
		id    string // the id in the reply: a number or null
	}{
		{`not json`, events.CodeInvalidData, "null"},
		{`["SUBSCRIBE"]`, events.CodeInvalidData, "null"},
		{`"x"`, events.CodeInvalidData, "null"},
		{``, events.CodeInvalidData, "null"},
		{`{"method":"SUBSCRIBE","params":["BTCUSD@tick"]}`, events.CodeMandatoryParam, "null"},
		{`{"method":"SUBSCRIBE","params":["BTCUSD@tick"],"id":-1}`, events.CodeMandatoryParam, "null"},
		{`{"method":"SUBSCRIBE","params":["BTCUSD@tick"],"id":1.5}`, events.CodeMandatoryParam, "null"},
		{`{"method":"SUBSCRIBE","params":["BTCUSD@tick"],"id":"1"}`, events.CodeMandatoryParam, "null"},
		{`{"method":"SUBSCRIBE","params":["BTCUSD@tick"],"id":18446744073709551616}`, events.CodeMandatoryParam, "null"},
		{`{"method":"SUBSCRIBE","params":["BTCUSD@tick"],"id":null}`, events.CodeMandatoryParam, "null"},
		{`{"params":["BTCUSD@tick"],"id":3}`, events.CodeMandatoryParam, "3"},
		{`{"method":5,"id":3}`, events.CodeMandatoryParam, "3"},
		{`{"method":null,"id":3}`, events.CodeMandatoryParam, "3"},
		{`{"method":"SUBSCRIBE","id":4}`, events.CodeMandatoryParam, "4"},
		{`{"method":"SUBSCRIBE","params":[],"id":4}`, events.CodeMandatoryParam, "4"},
		{`{"method":"SUBSCRIBE","params":"BTCUSD@tick","id":4}`, events.CodeMandatoryParam, "4"},
		{`{"method":"UNSUBSCRIBE","params":[1,2],"id":4}`, events.CodeMandatoryParam, "4"},
		{`{"method":"UNSUBSCRIBE","params":null,"id":4}`, events.CodeMandatoryParam, "4"},
		{`{"method":"subscribe","params":["BTCUSD@tick"],"id":5}`, events.CodeNotSupported, "5"},
		{`{"method":"SET_PROPERTY","id":5}`, events.CodeNotSupported, "5"},
	}
	for _, tc := range cases {
		_, cerr := parseControl([]byte(tc.frame))
		if cerr == nil {
			t.Errorf("%s: accepted", tc.frame)
			continue
		}
		var reply struct {
			Code events.Code     `json:"code"`
			Msg  string          `json:"msg"`
			ID   json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(errorFrame(cerr), &reply); err != nil {
			t.Fatalf("%s: reply %s is not JSON", tc.frame, errorFrame(cerr))
		}
		if reply.Code != tc.code || string(reply.ID) != tc.id || reply.Msg == "" {
			t.Errorf("%s: reply %s, want code %d id %s", tc.frame, errorFrame(cerr), tc.code, tc.id)
		}
	}
}

func TestResultFramesCarryNullOrTheListAndTheID(t *testing.T) {
	if got := string(resultFrame(9, nil)); got != `{"result":null,"id":9}` {
		t.Errorf("null result: %s", got)
	}
	if got := string(resultFrame(9, []string{})); got != `{"result":[],"id":9}` {
		t.Errorf("empty list: %s", got)
	}
	if got := string(resultFrame(1, []string{"A@tick", "B@depth"})); got != `{"result":["A@tick","B@depth"],"id":1}` {
		t.Errorf("list: %s", got)
	}
}
