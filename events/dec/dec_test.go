package dec

import "testing"

func TestParseRefusesWhatIsNotAPlainDecimal(t *testing.T) {
	for _, s := range []string{"", "-", "1e5", "NaN", "Infinity", "+1", "1.2.3", ".5", "5.", "0x10", " 1", "1,5"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	for s, want := range map[string]string{"1.2345": "1.2345", "-3": "-3", "0.10": "0.10", "100": "100"} {
		d, err := Parse(s)
		if err != nil || String(d) != want {
			t.Errorf("Parse(%q) = %s, %v; want %s", s, String(d), err, want)
		}
	}
}

func TestFixedRoundsHalfEvenToPlaces(t *testing.T) {
	cases := []struct {
		in     string
		places int32
		want   string
	}{
		{"1.1", 5, "1.10000"}, {"1.123455", 5, "1.12346"}, {"1.123465", 5, "1.12346"},
		{"-0.00001", 2, "0.00"}, {"10000", 4, "10000.0000"},
	}
	for _, c := range cases {
		if got := Fixed(MustParse(c.in), c.places); got != c.want {
			t.Errorf("Fixed(%s,%d) = %s, want %s", c.in, c.places, got, c.want)
		}
	}
}

func TestIsMultiple(t *testing.T) {
	if !IsMultiple(MustParse("0.30"), MustParse("0.01")) || IsMultiple(MustParse("0.015"), MustParse("0.01")) {
		t.Fatal("IsMultiple wrong")
	}
}
