package app_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
)

// metricValue returns the value of the series whose line starts with series, -1 when absent.
func metricValue(body, series string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+]+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func TestMetricsEndpointReportsRequestsRelayAndProjections(t *testing.T) {
	svc := apptest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, err := svc.App.MetricsAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		res, err := svc.HTTP.Get(svc.BaseURL + "/v1/ping")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	scrape := func() string {
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	var body string
	apptest.Eventually(t, 30*time.Second, "relay and projection metrics", func() bool {
		body = scrape()
		return metricValue(body, `tradesvc_relay_appended_total{feed="mt5.ticks"}`) > 0 &&
			metricValue(body, `tradesvc_projection_events_total{projection="projection.reference"}`) > 0
	})
	if v := metricValue(body, `tradesvc_http_requests_total{method="GET",route="/v1/ping",status="200"}`); v < 3 {
		t.Errorf("ping requests counted %v, want at least 3", v)
	}
	if v := metricValue(body, `tradesvc_http_request_duration_seconds_count{method="GET",route="/v1/ping"}`); v < 3 {
		t.Errorf("ping latency observations %v, want at least 3", v)
	}
	if v := metricValue(body, `tradesvc_projection_failures_total{projection="projection.reference"}`); v > 0 {
		t.Errorf("reference projection failed %v times", v)
	}
}
