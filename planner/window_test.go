package planner

import (
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("time zone %s not available: %v", name, err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestWindowState(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	weekend := model.Window{Days: []time.Weekday{time.Saturday, time.Sunday}, Start: 2 * time.Hour,
		Duration: 4 * time.Hour, Location: berlin}
	daily := func(start, d time.Duration, loc *time.Location) model.Window {
		return model.Window{Days: []time.Weekday{0, 1, 2, 3, 4, 5, 6}, Start: start, Duration: d, Location: loc}
	}
	lateSat := model.Window{Days: []time.Weekday{time.Saturday}, Start: 23 * time.Hour, Duration: 3 * time.Hour, Location: time.UTC}
	sunToMon := model.Window{Days: []time.Weekday{time.Sunday}, Start: 22 * time.Hour, Duration: 4 * time.Hour, Location: time.UTC}
	monday := model.Window{Days: []time.Weekday{time.Monday}, Start: 2 * time.Hour, Duration: time.Hour, Location: time.UTC}
	wednesday := model.Window{Days: []time.Weekday{time.Wednesday}, Start: 2 * time.Hour, Duration: time.Hour, Location: time.UTC}
	tests := []struct {
		name    string
		windows []model.Window
		now     string
		open    bool
		closes  string // RFC3339, when open
		next    string // RFC3339, when closed
	}{
		{"closed on a Friday: next is Saturday 02:00 CET", []model.Window{weekend}, "2026-11-27T12:00:00Z", false, "", "2026-11-28T01:00:00Z"},
		{"open on Saturday 03:00 CET", []model.Window{weekend}, "2026-11-28T02:00:00Z", true, "2026-11-28T05:00:00Z", ""},
		{"opens at its start exactly", []model.Window{weekend}, "2026-11-28T01:00:00Z", true, "2026-11-28T05:00:00Z", ""},
		{"closed at its end exactly", []model.Window{weekend}, "2026-11-28T05:00:00Z", false, "", "2026-11-29T01:00:00Z"},
		{"after Sunday's: next Saturday (week wrap)", []model.Window{weekend}, "2026-11-29T06:00:00Z", false, "", "2026-12-05T01:00:00Z"},
		{"summer time: 02:00 CEST is 00:00 UTC", []model.Window{weekend}, "2026-07-03T12:00:00Z", false, "", "2026-07-04T00:00:00Z"},
		{"past midnight: Saturday's window open on Sunday", []model.Window{lateSat}, "2026-11-29T01:30:00Z", true, "2026-11-29T02:00:00Z", ""},
		{"past midnight and the week's end: Sunday's open on Monday", []model.Window{sunToMon}, "2026-11-30T01:00:00Z", true, "2026-11-30T02:00:00Z", ""},
		{"next opening across the week's end", []model.Window{monday}, "2026-11-28T12:00:00Z", false, "", "2026-11-30T02:00:00Z"},
		{"the earliest of two windows", []model.Window{wednesday, monday}, "2026-11-30T12:00:00Z", false, "", "2026-12-02T02:00:00Z"},
		{"either window open", []model.Window{wednesday, monday}, "2026-11-30T02:30:00Z", true, "2026-11-30T03:00:00Z", ""},
		// 2026-03-29: Berlin's clocks go from 02:00 CET to 03:00 CEST. 02:30 does not exist that
		// day: the window opens at 03:30 CEST (01:30 UTC) and lasts its hour of elapsed time.
		{"spring forward: a start in the gap", []model.Window{daily(2*time.Hour+30*time.Minute, time.Hour, berlin)}, "2026-03-29T00:00:00Z", false, "", "2026-03-29T01:30:00Z"},
		{"spring forward: duration is elapsed time", []model.Window{daily(time.Hour, 2*time.Hour, berlin)}, "2026-03-29T01:30:00Z", true, "2026-03-29T02:00:00Z", ""},
		// 2026-10-25: from 03:00 CEST back to 02:00 CET; 02:30 happens twice: the first counts.
		{"fall back: a repeated start opens at its first occurrence", []model.Window{daily(2*time.Hour+30*time.Minute, time.Hour, berlin)}, "2026-10-25T00:00:00Z", false, "", "2026-10-25T00:30:00Z"},
		{"fall back: open during the repeated hour", []model.Window{daily(2*time.Hour+30*time.Minute, time.Hour, berlin)}, "2026-10-25T01:15:00Z", true, "2026-10-25T01:30:00Z", ""},
		{"a week-long window", []model.Window{{Days: []time.Weekday{time.Monday}, Duration: 7 * 24 * time.Hour, Location: time.UTC}}, "2026-11-29T23:59:00Z", true, "2026-11-30T00:00:00Z", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open, closes, next := WindowState(tt.windows, utc(tt.now))
			if open != tt.open {
				t.Fatalf("open = %v at %s, want %v", open, tt.now, tt.open)
			}
			if tt.open && !closes.Equal(utc(tt.closes)) {
				t.Errorf("closes %s, want %s", closes.UTC().Format(time.RFC3339), tt.closes)
			}
			if !tt.open && !next.Equal(utc(tt.next)) {
				t.Errorf("next opening %s, want %s", next.UTC().Format(time.RFC3339), tt.next)
			}
			if tt.open && !next.IsZero() || !tt.open && !closes.IsZero() {
				t.Errorf("open %v with closes %v and next %v: only one may be set", open, closes, next)
			}
		})
	}
	if open, _, _ := WindowState(nil, utc("2026-11-27T12:00:00Z")); open {
		// No windows is "always open" for apply, which checks len first; WindowState itself
		// finds nothing open.
		t.Errorf("no windows reported an open one")
	}
}

func TestWindowString(t *testing.T) {
	w := model.Window{Days: []time.Weekday{time.Saturday, time.Sunday}, Start: 2*time.Hour + 5*time.Minute,
		Duration: 90 * time.Minute, Zone: "Europe/Berlin"}
	if got, want := w.String(), "sat,sun 02:05 for 1h30m (Europe/Berlin)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
