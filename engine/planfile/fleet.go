package planfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
)

// Fleet is a saved plan across clusters (mcp plan -out of a configuration of clusters):
// every cluster's plan as a File of its own, with its own fingerprint, in stage order.
// It is told from a File by its "clusters" key; a File is read as it always was.
type Fleet struct {
	FormatVersion int       `json:"format_version"`
	MCPVersion    string    `json:"mcp_version"`
	Created       time.Time `json:"created"`
	ConfigDir     string    `json:"config_dir"`
	Clusters      []Cluster `json:"clusters"`
	// FailureDomains are the fleet's failure_domain blocks when planned: apply holds a
	// cluster back by them (with each cluster's Labels), as the plan's Waves show.
	FailureDomains []model.FailureDomain `json:"failure_domains,omitempty"`
	Waves          []model.StageWaves    `json:"waves,omitempty"`
}

// Cluster is one cluster's part of a Fleet: its plan, or why it has none.
type Cluster struct {
	Name  string `json:"name"`
	Stage string `json:"stage"`
	// Plan is the cluster's plan, as a saved plan of that cluster alone (its Cluster set).
	Plan *File `json:"plan,omitempty"`
	// Unknown is why the cluster could not be planned: apply stops at its stage.
	Unknown string `json:"unknown,omitempty"`
	// Overrides are the places of the cluster's own variable values, by variable, and
	// Reach the variables each file (by path) and unit (by name) uses: what mcp show
	// names as the override that made the cluster differ. Display only.
	Overrides map[string]string   `json:"overrides,omitempty"`
	Reach     map[string][]string `json:"reach,omitempty"`
	// Labels are the cluster block's labels: the failure domains it is in.
	Labels map[string]string `json:"labels,omitempty"`
	// Shown: planned and shown in this run (apply across clusters without a saved plan),
	// not read from a file: applied as approved (engine.Approved). Never saved.
	Shown bool `json:"-"`
}

// ErrFleet is Read's refusal of a saved plan across clusters (ReadAny reads it).
var ErrFleet = errors.New("it is a saved plan of several clusters: mcp apply and mcp show read it; save one cluster's plan with mcp plan -cluster NAME -out=FILE")

// WriteFleet saves f at path atomically.
func WriteFleet(path string, f *Fleet) error {
	f.FormatVersion = FormatVersion
	for _, c := range f.Clusters {
		if c.Plan != nil {
			c.Plan.FormatVersion = FormatVersion
		}
	}
	return write(path, f)
}

// ReadAny loads a saved plan of one cluster (a File, as Read) or across clusters (a
// Fleet), checking each cluster's plan as Read checks one.
func ReadAny(path string) (*File, *Fleet, error) {
	b, err := boundedfile.Read(path, MaxSize, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("loading plan %q: %w", path, err)
	}
	if !isFleet(b) {
		f, err := decode(b)
		if err != nil {
			return nil, nil, fmt.Errorf("loading plan %q: %w", path, err)
		}
		return f, nil, nil
	}
	fl, err := decodeFleet(b)
	if err != nil {
		return nil, nil, fmt.Errorf("loading plan %q: %w", path, err)
	}
	return nil, fl, nil
}

// isFleet says whether b is a JSON object with a "clusters" key.
func isFleet(b []byte) bool {
	var probe struct {
		Clusters json.RawMessage `json:"clusters"`
	}
	return json.Unmarshal(b, &probe) == nil && probe.Clusters != nil
}

func decodeFleet(b []byte) (*Fleet, error) {
	fl := new(Fleet)
	if err := strict(b, fl); err != nil {
		return nil, err
	}
	if fl.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("format version %d, this mcp reads %d", fl.FormatVersion, FormatVersion)
	}
	if len(fl.Clusters) == 0 {
		return nil, errors.New("it holds no cluster")
	}
	for _, fd := range fl.FailureDomains {
		if fd.Label == "" || fd.MaxDisrupting < 1 {
			return nil, fmt.Errorf("failure domain %q has max_disrupting %d, less than 1 (was it edited?)", fd.Label, fd.MaxDisrupting)
		}
	}
	seen := map[string]bool{}
	for _, c := range fl.Clusters {
		switch {
		case c.Name == "":
			return nil, errors.New("a cluster has no name")
		case seen[c.Name]:
			return nil, fmt.Errorf("cluster %s is in it twice", c.Name)
		case (c.Plan == nil) == (c.Unknown == ""):
			return nil, fmt.Errorf("cluster %s has either both a plan and a reason it has none, or neither", c.Name)
		}
		seen[c.Name] = true
		if c.Plan == nil {
			continue
		}
		if c.Plan.Cluster != c.Name {
			return nil, fmt.Errorf("cluster %s holds cluster %q's plan (was it edited?)", c.Name, c.Plan.Cluster)
		}
		if c.Plan.FormatVersion != FormatVersion {
			return nil, fmt.Errorf("cluster %s: format version %d, this mcp reads %d", c.Name, c.Plan.FormatVersion, FormatVersion)
		}
		if err := c.Plan.check(); err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
	}
	return fl, nil
}
