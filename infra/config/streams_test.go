package config

import (
	"strings"
	"testing"
	"time"
)

func TestStreamDefaultsAreTheSpecsLimits(t *testing.T) {
	c, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Streams{PingInterval: 3 * time.Minute, PongTimeout: 10 * time.Minute, Lifetime: 24 * time.Hour,
		MaxConns: 10000, MaxConnsPerAddr: 20, SendQueue: 1024, WriteTimeout: 10 * time.Second,
		ListenKeyLifetime: time.Hour, UserRecheck: 5 * time.Second, UserMaxLag: 5 * time.Second, ChangeRetention: time.Hour}
	got := c.Streams
	if got.DepthSymbols != nil {
		t.Fatalf("depth enabled by default: %v", got.DepthSymbols)
	}
	got.DepthSymbols = nil
	if got.PingInterval != want.PingInterval || got.PongTimeout != want.PongTimeout || got.Lifetime != want.Lifetime ||
		got.MaxConns != want.MaxConns || got.MaxConnsPerAddr != want.MaxConnsPerAddr || got.SendQueue != want.SendQueue ||
		got.WriteTimeout != want.WriteTimeout || got.ListenKeyLifetime != want.ListenKeyLifetime || got.UserRecheck != want.UserRecheck ||
		got.UserMaxLag != want.UserMaxLag || got.ChangeRetention != want.ChangeRetention {
		t.Fatalf("stream defaults %+v, want %+v", got, want)
	}
}

func TestStreamSettingsComeFromTheEnvironmentAndMustBePositive(t *testing.T) {
	c, err := load(t, nil, map[string]string{"TRADESVC_WS_PING_INTERVAL": "1s", "TRADESVC_WS_DEPTH_SYMBOLS": "BTCUSD, EURUSD",
		"TRADESVC_LISTEN_KEY_LIFETIME": "8s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Streams.PingInterval != time.Second || c.Streams.ListenKeyLifetime != 8*time.Second ||
		strings.Join(c.Streams.DepthSymbols, ",") != "BTCUSD,EURUSD" {
		t.Fatalf("got %+v", c.Streams)
	}
	_, err = load(t, []string{"--ws-send-queue", "0", "--ws-lifetime", "-1s"}, nil)
	if err == nil || !strings.Contains(err.Error(), "ws-send-queue") || !strings.Contains(err.Error(), "ws-lifetime") {
		t.Fatalf("bad stream settings: %v", err)
	}
}
