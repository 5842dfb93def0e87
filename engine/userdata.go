package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
)

// pointerConfigs builds, per pool with a user_data block, the pointer config its Secret
// must hold: the bytes `mcp pointer POOL -url URL -ca CA -token-file TOKEN` prints. The CA
// and token files are read now, so a renewed one shows in this plan.
func (w *Workspace) pointerConfigs() (map[string][]byte, error) {
	out := map[string][]byte{}
	if w.Desired == nil {
		return out, nil
	}
	for i := range w.Desired.Pools {
		p := &w.Desired.Pools[i]
		u := p.BootImage.UserData
		if u == nil {
			continue
		}
		o := ignition.PointerOptions{URL: u.URL, Pool: p.Name}
		if u.CAFile != "" {
			b, err := boundedfile.Read(u.CAFile, boundedfile.MaxCredential, 0)
			if err != nil {
				return nil, fmt.Errorf("pool %s: user_data ca_file: %w", p.Name, err)
			}
			o.CAPEM = b
		}
		if u.TokenFile != "" {
			b, err := boundedfile.ReadToken(u.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("pool %s: user_data token_file: %w", p.Name, err)
			}
			if o.Token = strings.TrimRight(string(b), "\r\n "); o.Token == "" {
				return nil, fmt.Errorf("pool %s: user_data token_file %s is empty", p.Name, u.TokenFile)
			}
		}
		b, err := ignition.Pointer(o)
		if err != nil {
			return nil, fmt.Errorf("pool %s: user_data: %w", p.Name, err)
		}
		out[p.Name] = b
	}
	return out, nil
}

// observeUserData reads each user_data Secret into the fleet (its digest, and whether its
// token is the pool's), and returns the pointer configs to write, by pool, and the digests
// of the values read, whole (what the writes are conditional on; in memory only: they
// hash the token). A user_data block needs a provider that holds Secrets.
func (w *Workspace) observeUserData(ctx context.Context, fleet *model.Fleet) (pointers map[string][]byte, seen map[string]string, err error) {
	want, err := w.pointerConfigs()
	if err != nil || len(want) == 0 {
		return want, nil, err
	}
	store := w.provider()
	if !store.Has(providers.CapUserDataStore) {
		return nil, nil, fmt.Errorf("user_data needs a provider that holds Secrets (kubernetes); provider %q has none", w.Desired.Provider.Type)
	}
	seen = map[string]string{}
	for i := range w.Desired.Pools {
		u := w.Desired.Pools[i].BootImage.UserData
		if u == nil {
			continue
		}
		v, ok, err := store.UserData(ctx, u.Namespace, u.Name, u.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("pool %s: reading user_data secret %s: %w", w.Desired.Pools[i].Name, u.SecretID(), err)
		}
		pool := w.Desired.Pools[i].Name
		obj := model.UserDataObject{Pool: pool, Namespace: u.Namespace, Name: u.Name, Key: u.Key}
		if ok {
			var token []string
			obj.Digest, token = pointerDigest(v)
			_, wantToken := pointerDigest(want[pool])
			obj.TokenCurrent = slices.Equal(token, wantToken)
			seen[pool] = providers.Digest(v)
		}
		fleet.UserData = append(fleet.UserData, obj)
	}
	return want, seen, nil
}

// pointerDigest is how plans name a user-data value: the digest of the value with its
// header values (the token) left out, and those values, which stay in memory. The token is
// left out rather than the digest keyed: a key would have to outlive the plan (apply
// compares digests with a saved plan's) yet stay out of it, and neither state nor plan is a
// secret's place (docs/decisions.md). A value that is not JSON is no pointer config mcp
// wrote, and is hashed whole.
func pointerDigest(b []byte) (digest string, token []string) {
	r, token, ok := ignition.RedactPointer(b)
	if !ok {
		return providers.Digest(b), nil
	}
	return providers.Digest(r), token
}

// pointerDigests are the digests of the pointer configs to write, by pool, for the planner.
func (o *Observed) pointerDigests() map[string]string {
	out := make(map[string]string, len(o.Pointers))
	for pool, b := range o.Pointers {
		out[pool], _ = pointerDigest(b)
	}
	return out
}

// setUserData writes a pool's pointer config into its Secret, if the plan changes it.
func (a *applier) setUserData(ctx context.Context, bp *planner.BootImagePlan) error {
	ud := bp.UserData
	if ud == nil || ud.Action == planner.UserDataNoOp {
		return nil
	}
	b := a.obs.Pointers[bp.Pool]
	if d, _ := pointerDigest(b); b == nil || d != ud.To {
		return errors.New("its pointer config is not the one planned") // rederive makes this unreachable
	}
	// The write is conditional on the whole value the refresh of the plan carried out read
	// (token and all), which no plan file carries: a Secret changed since is an error.
	return a.w.provider().SetUserData(ctx, ud.Namespace, ud.Name, ud.Key, b, a.obs.UserData[bp.Pool])
}
