package events

import "testing"

// TestCodeHTTPStatusMatchesSpec pins every row of the spec's error tables to its HTTP status.
func TestCodeHTTPStatusMatchesSpec(t *testing.T) {
	rows := map[Code]int{
		// -10xx
		-1000: 503, -1001: 500, -1002: 401, -1003: 429, -1006: 503, -1007: 504, -1008: 503,
		-1014: 400, -1015: 429, -1016: 410, -1017: 503, -1020: 400, -1021: 400, -1022: 401,
		// -11xx
		-1100: 400, -1101: 400, -1102: 400, -1103: 400, -1104: 400, -1105: 400, -1106: 400,
		-1111: 400, -1115: 400, -1116: 400, -1117: 400, -1118: 400, -1119: 400, -1120: 400,
		-1121: 400, -1122: 400, -1125: 400, -1127: 400, -1128: 400, -1130: 400, -1131: 400,
		-1132: 400, -1133: 400,
		// -20xx
		-2010: 400, -2011: 400, -2013: 400, -2014: 401, -2015: 401, -2018: 400, -2021: 400,
		-2022: 400, -2023: 400, -2024: 400,
		// -40xx
		-4001: 400, -4002: 400, -4003: 400, -4004: 400, -4005: 400, -4006: 400, -4007: 400,
		-4008: 400, -4009: 400, -4010: 400, -4011: 400, -4012: 400, -4013: 400, -4014: 400,
		-4015: 400, -4016: 400, -4017: 400, -4018: 400, -4019: 400, -4020: 400, -4021: 400,
		-4022: 400, -4023: 400, -4024: 400, -4025: 400,
		// -50xx
		-5001: 400, -5002: 400, -5003: 400, -5004: 400, -5005: 400, -5006: 400, -5007: 400,
		-5008: 504, -5009: 503, -5010: 400, -5011: 503, -5012: 400, -5013: 400, -5014: 400,
		-5015: 503, -5016: 400, -5017: 400, -5018: 400,
	}
	for c, want := range rows {
		if got := c.HTTPStatus(); got != want {
			t.Errorf("Code(%d).HTTPStatus() = %d, want %d", c, got, want)
		}
	}
	if got := Code(-9999).HTTPStatus(); got != 500 {
		t.Errorf("unknown code status = %d, want 500", got)
	}
}

// TestCodeForRetcodeMatchesSpec pins every row of "Platform return codes" and the
// mt5RetCode columns of the -40xx and -50xx tables.
func TestCodeForRetcodeMatchesSpec(t *testing.T) {
	rows := map[int]Code{
		10004: -5001, 10006: -5007, 10011: -5007, 10007: -5010, 10012: -5008, 10013: -5017,
		10014: -4004, 10015: -4002, 10016: -4009, 10017: -4011, 10018: -4010, 10019: -2018,
		10020: -5002, 10021: -5003, 10022: -4012, 10023: -5004, 10024: -5011, 10025: -5005,
		10026: -5012, 10027: -5012, 10028: -5013, 10029: -4021, 10030: -4017, 10031: -5015,
		10032: -5014, 10033: -4018, 10034: -4020, 10035: -5016, 10036: -5006, 10038: -4024,
		10039: -4025, 10040: -4019, 10041: -5018, 10042: -4013, 10043: -4014, 10044: -4015,
		10045: -4023, 10046: -4022,
		// success
		10008: 0, 10009: 0, 10010: 0,
	}
	for ret, want := range rows {
		if got := CodeForRetcode(ret); got != want {
			t.Errorf("CodeForRetcode(%d) = %d, want %d", ret, got, want)
		}
	}
	if len(retcodes) != len(rows)-3 {
		t.Errorf("retcode table has %d rows, spec lists %d", len(retcodes), len(rows)-3)
	}
	for _, ret := range []int{10001, 10002, 10003, 10005, 10037, 99999, 0} {
		if got := CodeForRetcode(ret); got != CodeServerRejected {
			t.Errorf("unmapped CodeForRetcode(%d) = %d, want -5007", ret, got)
		}
	}
}

func TestRejectionError(t *testing.T) {
	r := &Rejection{Code: CodeRequote, Msg: "Requote.", Retcode: 10004}
	if got, want := r.Error(), "code -5001: Requote. (mt5RetCode 10004)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if r.HTTPStatus() != 400 {
		t.Errorf("status = %d", r.HTTPStatus())
	}
	var err error = Reject(CodeInvalidSymbol, "Invalid symbol.")
	if err.Error() != "code -1121: Invalid symbol." {
		t.Errorf("Error() = %q", err.Error())
	}
}
