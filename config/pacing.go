package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

// A pool's pacing and maintenance windows: the canary block, max_failures, soak and window
// blocks (docs/configuration.md, "Pacing and windows").

var canarySchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "count"}, {Name: "soak"}}}

// canary reads `canary { count = 1, soak = "10m" }`; count defaults to 1.
func (l *loader) canary(b *hcl.Block, p *model.Pacing) hcl.Diagnostics {
	content, diags := b.Body.Content(canarySchema)
	p.Canary = 1
	if a := content.Attributes["count"]; a != nil {
		n, d := l.atLeastOne(a)
		diags = append(diags, d...)
		p.Canary = n
	}
	if a := content.Attributes["soak"]; a != nil {
		d, dd := l.duration(a)
		diags = append(diags, dd...)
		p.CanarySoak = d
	}
	return diags
}

// atLeastOne reads a whole number >= 1 (canary count, max_failures).
func (l *loader) atLeastOne(a *hcl.Attribute) (int, hcl.Diagnostics) { return l.wholeFrom(a, 1) }

// wholeFrom reads a whole number >= least (and at most 2^20); least when it is not one.
func (l *loader) wholeFrom(a *hcl.Attribute, least int64) (int, hcl.Diagnostics) {
	v, diags := l.value(a, cty.Number, "a whole number")
	if v == cty.NilVal {
		return int(least), diags
	}
	n, acc := v.AsBigFloat().Int64()
	if !v.AsBigFloat().IsInt() || acc != 0 || n < least || n > 1<<20 {
		return int(least), append(diags, errAt(a.Expr.Range(), "Invalid "+a.Name,
			fmt.Sprintf("%s must be a whole number, at least %d; got %s.", a.Name, least, v.AsBigFloat().Text('g', -1))))
	}
	return int(n), diags
}

var windowSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "days"},
	{Name: "start", Required: true}, {Name: "duration", Required: true}, {Name: "time_zone"}}}

// maxWindow: a window longer than a week would always be open.
const maxWindow = 7 * 24 * time.Hour

// window reads `window { days = ["sat","sun"], start = "02:00", duration = "4h",
// time_zone = "Europe/Berlin" }`. Without days it opens every day; without a time zone,
// in UTC.
func (l *loader) window(b *hcl.Block) (model.Window, hcl.Diagnostics) {
	w := model.Window{Location: time.UTC, Zone: "UTC", DeclRange: hclpos.From(b.DefRange)}
	content, diags := b.Body.Content(windowSchema)
	if a := content.Attributes["days"]; a != nil {
		days, d := l.strList(a)
		diags = append(diags, d...)
		seen := map[time.Weekday]bool{}
		for i, s := range days {
			wd := slices.Index(model.DayNames[:], strings.ToLower(s))
			if wd < 0 {
				diags = append(diags, errAt(elementRange(a, i), "Invalid day",
					fmt.Sprintf("Day %q: use mon, tue, wed, thu, fri, sat or sun.", s)))
				continue
			}
			if !seen[time.Weekday(wd)] {
				seen[time.Weekday(wd)] = true
				w.Days = append(w.Days, time.Weekday(wd))
			}
		}
		if len(days) == 0 && !d.HasErrors() {
			diags = append(diags, errAt(a.Expr.Range(), "No days", "A window needs at least one day; leave days out for every day."))
		}
	} else {
		w.Days = []time.Weekday{0, 1, 2, 3, 4, 5, 6}
	}
	// Monday first, as people write weeks.
	slices.SortFunc(w.Days, func(a, b time.Weekday) int { return (int(a)+6)%7 - (int(b)+6)%7 })
	if a := content.Attributes["start"]; a != nil {
		s, d := l.str(a)
		diags = append(diags, d...)
		if !d.HasErrors() {
			t, err := time.Parse("15:04", s)
			if err != nil || len(s) != 5 {
				diags = append(diags, errAt(a.Expr.Range(), "Invalid start",
					fmt.Sprintf("start must be a time of day as HH:MM, 24-hour, such as \"02:00\"; got %q.", s)))
			} else {
				w.Start = time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute
			}
		}
	}
	if a := content.Attributes["duration"]; a != nil {
		d, dd := l.duration(a)
		diags = append(diags, dd...)
		if d > maxWindow {
			diags = append(diags, errAt(a.Expr.Range(), "Invalid duration",
				fmt.Sprintf("A window lasts at most a week (168h); got %s. Leave the window out to allow any time.", d)))
		}
		w.Duration = d
	}
	if a := content.Attributes["time_zone"]; a != nil {
		s, d := l.str(a)
		diags = append(diags, d...)
		if !d.HasErrors() {
			loc, err := loadZone(s)
			if err != nil {
				diags = append(diags, errAt(a.Expr.Range(), "Invalid time_zone", err.Error()))
			} else {
				w.Location, w.Zone = loc, s
			}
		}
	}
	return w, diags
}

// loadZone loads an IANA time zone. "Local" and "" are refused: the plan would depend on
// the machine that makes it.
func loadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("time_zone %q would depend on the machine mcp runs on: name a zone such as \"Europe/Berlin\" or \"UTC\"", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time_zone %q is not a known IANA time zone (such as \"Europe/Berlin\" or \"UTC\")", name)
	}
	return loc, nil
}
