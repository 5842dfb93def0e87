package planner

import (
	"time"

	"github.com/mcpfleet/mcp/model"
)

// WindowState says whether any of windows is open at now: when open, until when (the
// latest end among the windows open now); when closed, when the next one opens. No
// windows: always open, with zero times.
//
// A window opens on each of its days at its start, wall-clock time in its zone, and lasts
// its duration in elapsed time, so it may run past midnight and past the end of the week.
// On the day clocks go forward a start in the skipped hour opens as Go's time.Date
// normalises it (02:30 in a gap 02:00→03:00 is 03:30); on the day they go back a start in
// the repeated hour opens at its first occurrence.
func WindowState(windows []model.Window, now time.Time) (open bool, closes, next time.Time) {
	for _, w := range windows {
		loc := w.Location
		if loc == nil {
			loc = time.UTC
		}
		local := now.In(loc)
		// Openings from 8 days back (a window lasts at most a week) to 8 days ahead (the
		// next opening is within a week, a day more for the zone's offset).
		for off := -8; off <= 8; off++ {
			day := time.Date(local.Year(), local.Month(), local.Day()+off, 0, 0, 0, 0, loc)
			if !hasDay(w.Days, day.Weekday()) {
				continue
			}
			at := opening(day, w.Start, loc)
			end := at.Add(w.Duration)
			switch {
			case !at.After(now) && now.Before(end):
				open = true
				if end.After(closes) {
					closes = end
				}
			case at.After(now) && (next.IsZero() || at.Before(next)):
				next = at
			}
		}
	}
	if open {
		next = time.Time{}
	}
	return open, closes, next
}

// opening is the instant of wall-clock start on day in loc. time.Date picks the first of a
// repeated wall-clock time (the earlier offset) when clocks go back.
func opening(day time.Time, start time.Duration, loc *time.Location) time.Time {
	h, m := int(start/time.Hour), int(start%time.Hour/time.Minute)
	t := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, loc)
	// Go may pick the second occurrence of a repeated time; an hour earlier with the same
	// wall clock is the first.
	if e := t.Add(-time.Hour); e.Hour() == h && e.Minute() == m && e.Day() == t.Day() {
		return e
	}
	return t
}

func hasDay(days []time.Weekday, d time.Weekday) bool {
	for _, x := range days {
		if x == d {
			return true
		}
	}
	return false
}
