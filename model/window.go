package model

import (
	"fmt"
	"strings"
	"time"
)

// DayNames are the day names a window's days are written with, Sunday first as
// time.Weekday counts them.
var DayNames = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// String describes the window as the plan shows it: "sat,sun 02:00 for 4h (Europe/Berlin)",
// "daily 23:00 for 1h30m (UTC)".
func (w Window) String() string {
	days := make([]string, len(w.Days))
	for i, d := range w.Days {
		days[i] = DayNames[d]
	}
	when := strings.Join(days, ",")
	if len(days) == 7 {
		when = "daily"
	}
	return fmt.Sprintf("%s %02d:%02d for %s (%s)", when,
		int(w.Start/time.Hour), int(w.Start%time.Hour/time.Minute), ShortDuration(w.Duration), w.Zone)
}

// ShortDuration writes d without zero units: "4h", "1h30m", "10m", "90s" ("0s" for 0).
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
