package bootsrv

import (
	"fmt"
	"mime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

const ignitionType = "application/vnd.coreos.ignition+json"

// accepted is what an Accept header allows.
type accepted struct {
	maxMinor  int      // highest Ignition 3.x minor named (-1: none)
	anyIgn    bool     // the Ignition type without a version
	wildcard  bool     // */*, application/*, application/json, or no header
	otherSpec []string // Ignition versions of other majors (2.x)
}

// parseAccept reads an Accept header as Ignition clients send it:
// "application/vnd.coreos.ignition+json;version=3.6.0, */*;q=0.1". A client that names
// version 3.N takes any spec 3.0…3.N (Ignition parses older 3.x specs).
func parseAccept(h string) accepted {
	a := accepted{maxMinor: -1}
	if strings.TrimSpace(h) == "" {
		a.wildcard = true
		return a
	}
	for _, part := range strings.Split(h, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if q, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
				continue
			}
		}
		switch mt {
		case "*/*", "application/*", "application/json":
			a.wildcard = true
		case ignitionType:
			v, ok := params["version"]
			if !ok {
				a.anyIgn = true
				continue
			}
			var major, minor, patch int
			if n, _ := fmt.Sscanf(v, "%d.%d.%d", &major, &minor, &patch); n < 2 {
				continue
			}
			if major == 3 {
				a.maxMinor = max(a.maxMinor, minor)
			} else {
				a.otherSpec = append(a.otherSpec, v)
			}
		}
	}
	return a
}

// acceptCache remembers parsed Accept headers: a fleet's clients send a handful of
// distinct ones, and parsing was a tenth of the serving CPU in a boot storm. Past maxCached
// distinct headers (a hostile client inventing them) it parses without remembering.
var acceptCache acceptMemo

const maxCached = 256

type acceptMemo struct {
	m sync.Map // string -> accepted
	n atomic.Int32
}

func (c *acceptMemo) parse(h string) accepted {
	if a, ok := c.m.Load(h); ok {
		return a.(accepted)
	}
	h = strings.Clone(h) // the caller's string may alias a request buffer; the cache keeps it
	a := parseAccept(h)
	if c.n.Load() < maxCached {
		if _, loaded := c.m.LoadOrStore(h, a); !loaded {
			c.n.Add(1)
		}
	}
	return a
}

// negotiate picks the body to serve for an Accept header, or says why none can be (406):
// the highest spec the client accepts that can express the config; a client that names no
// Ignition version gets the spec the config was rendered in.
func (pc *poolConfig) negotiate(header string) (*body, string) {
	a := acceptCache.parse(header)
	if a.maxMinor < 0 {
		if a.anyIgn || a.wildcard {
			if b := pc.byMinor[pc.native]; b != nil {
				return b, ""
			}
			return pc.highest(newest), ""
		}
		if len(a.otherSpec) > 0 {
			return nil, fmt.Sprintf("this server serves Ignition spec 3.x; the client accepts only %s "+
				"(boot a newer image, whose Ignition takes spec 3)", strings.Join(a.otherSpec, ", "))
		}
		return nil, fmt.Sprintf("the client accepts neither %s nor application/json (Accept: %q)", ignitionType, header)
	}
	if b := pc.highest(min(a.maxMinor, newest)); b != nil {
		return b, ""
	}
	need := 0
	for m := range pc.byMinor {
		if need == 0 || m < need {
			need = m
		}
	}
	return nil, fmt.Sprintf("the client accepts Ignition spec up to 3.%d.0, but pool config %s needs spec 3.%d.0 or newer: %s",
		a.maxMinor, pc.rendered, need, pc.why[min(a.maxMinor, newest)])
}

// highest is the body in the highest spec <= 3.<minor>, or nil.
func (pc *poolConfig) highest(minor int) *body {
	for m := minor; m >= 0; m-- {
		if b := pc.byMinor[m]; b != nil {
			return b
		}
	}
	return nil
}
