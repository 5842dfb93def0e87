package fleetlock

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// fakeStore is a fleet in memory: SwapClaim compares and swaps as the provider's does.
type fakeStore struct {
	mu    sync.Mutex
	nodes []model.Node
	ids   map[string]string
	// afterSwap, when set, runs after each successful swap (a claimer racing this server).
	afterSwap func(f *fakeStore)
}

func (f *fakeStore) FleetLockNodes(context.Context) ([]model.Node, map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]model.Node, len(f.nodes))
	copy(out, f.nodes)
	return out, f.ids, nil
}

func (f *fakeStore) SwapClaim(_ context.Context, node string, old, next *model.Claim) error {
	f.mu.Lock()
	for i := range f.nodes {
		if f.nodes[i].Name == node {
			// The node's own claim: kured's lock is laid over it by the provider, not on it.
			own := f.nodes[i].Claim
			if u, _ := own.Updater(); u == model.UpdaterKured {
				own = f.nodes[i].OwnClaim
			}
			if !own.Same(old) {
				f.mu.Unlock()
				return model.ErrClaimChanged
			}
			f.nodes[i].Claim, f.nodes[i].OwnClaim = next, nil
		}
	}
	hook := f.afterSwap
	f.afterSwap = nil
	f.mu.Unlock()
	if hook != nil {
		hook(f)
	}
	return nil
}

func (f *fakeStore) claim(node string) *model.Claim {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.nodes {
		if n.Name == node {
			return n.Claim
		}
	}
	return nil
}

func fleet() *fakeStore {
	var nodes []model.Node
	ids := map[string]string{}
	for _, name := range []string{"w-0", "w-1", "w-2", "i-0"} {
		role := "worker"
		if name == "i-0" {
			role = "infra"
		}
		nodes = append(nodes, model.Node{Name: name, Ready: true, Labels: map[string]string{"role": role}})
		ids[name] = "mid-" + name
	}
	return &fakeStore{nodes: nodes, ids: ids}
}

func pools() []model.Pool {
	return []model.Pool{
		{Name: "worker", NodeSelector: map[string]string{"role": "worker"}, MaxUnavailable: model.IntOrPercent{Value: 1}},
		{Name: "infra", NodeSelector: map[string]string{"role": "infra"}, MaxUnavailable: model.IntOrPercent{Value: 1}},
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func server(t *testing.T, s *Slots) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Handler(s, slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(srv.Close)
	return srv
}

// post is one request as the protocol's description has a client send it.
func post(t *testing.T, url, op, id, group string, header bool) (int, Error) {
	t.Helper()
	body := `{"client_params":{"id":"` + id + `","group":"` + group + `"}}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/"+op, strings.NewReader(body))
	if header {
		req.Header.Set("fleet-lock-protocol", "true")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e Error
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(b, &e); err != nil || e.Kind == "" || e.Value == "" {
			t.Fatalf("%s: status %d with body %q: want the protocol's error object (kind, value)", op, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, e
}

// Requests the protocol does not allow are refused with its error object: no header, a
// GET, a body without client_params, an empty id, a group outside its pattern, an
// unknown endpoint.
func TestHandlerRefusesMalformedRequests(t *testing.T) {
	st := fleet()
	srv := server(t, &Slots{Store: st, Pools: pools(), Lease: time.Hour})
	if code, e := post(t, srv.URL, "pre-reboot", "mid-w-0", "default", false); code != 400 || e.Kind != KindHeader {
		t.Errorf("no fleet-lock-protocol header: %d %+v", code, e)
	}
	for _, tc := range []struct{ body, kind string }{
		{`{}`, KindParams}, {`{"client_params":{"id":"","group":"default"}}`, KindParams},
		{`{"client_params":{"id":"x","group":"a b"}}`, KindParams}, {`{"client_params":{"id":"x"}}`, KindParams},
		{`not json`, KindBody},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/pre-reboot", strings.NewReader(tc.body))
		req.Header.Set("fleet-lock-protocol", "true")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 400 || e.Kind != tc.kind || e.Value == "" {
			t.Errorf("body %s: %d %+v; want 400 %s", tc.body, resp.StatusCode, e, tc.kind)
		}
	}
	resp, err := http.Get(srv.URL + "/v1/pre-reboot")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
	if code, e := post(t, srv.URL, "reboot-now", "mid-w-0", "default", true); code != 404 || e.Kind != KindNotFound {
		t.Errorf("unknown endpoint: %d %+v", code, e)
	}
	for _, n := range st.nodes {
		if n.Claim != nil {
			t.Errorf("node %s claimed by a refused request: %+v", n.Name, n.Claim)
		}
	}
}

// A slot is a claim on the client's node: recursive (locking twice holds one slot),
// owned (another client of the pool is refused while it is held), given back on steady
// state (unlocking what is not held succeeds), and lapsed when its lease ends without
// steady state. Groups name pools; "default" is the node's own pool.
func TestSlotsLockUnlockRecursiveLapse(t *testing.T) {
	st := fleet()
	clk := &clock{time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)}
	srv := server(t, &Slots{Store: st, Pools: pools(), Lease: time.Hour, Now: clk.now})
	url := srv.URL
	if code, _ := post(t, url, "pre-reboot", "mid-w-0", "default", true); code != 200 {
		t.Fatalf("first lock: %d", code)
	}
	c := st.claim("w-0")
	if id, ok := c.FleetLockID(); !ok || id != "mid-w-0" || !c.Held() || !c.Expires.Equal(clk.t.Add(time.Hour)) {
		t.Fatalf("w-0's claim after the lock: %+v; want fleetlock:mid-w-0 held for the lease", c)
	}
	clk.t = clk.t.Add(10 * time.Minute)
	if code, _ := post(t, url, "pre-reboot", "mid-w-0", "worker", true); code != 200 {
		t.Fatalf("second lock by the same client: %d; want 200 (recursive)", code)
	}
	if c := st.claim("w-0"); !c.Expires.Equal(clk.t.Add(time.Hour)) {
		t.Errorf("the recursive lock did not renew the lease: %+v", c)
	}
	if code, e := post(t, url, "pre-reboot", "mid-w-1", "default", true); code != 409 || e.Kind != KindSemaphore || !strings.Contains(e.Value, "w-0 (claimed by FleetLock client mid-w-0)") {
		t.Errorf("another worker while w-0 holds the pool's one slot: %d %+v; want semaphore full naming w-0", code, e)
	}
	if code, _ := post(t, url, "pre-reboot", "mid-i-0", "default", true); code != 200 {
		t.Errorf("the infra pool's node: %d; its pool has room", code)
	}
	if code, e := post(t, url, "pre-reboot", "mid-w-1", "infra", true); code != 409 || e.Kind != KindGroup {
		t.Errorf("a worker naming group infra: %d %+v; want group_mismatch", code, e)
	}
	if code, e := post(t, url, "pre-reboot", "nobody", "default", true); code != 404 || e.Kind != KindUnknownNode {
		t.Errorf("an id no node has: %d %+v", code, e)
	}
	for range 2 { // unbalanced unlocks succeed
		if code, _ := post(t, url, "steady-state", "mid-w-0", "default", true); code != 200 {
			t.Fatalf("unlock: %d", code)
		}
	}
	if c := st.claim("w-0"); c.Held() || c.Released.IsZero() {
		t.Errorf("w-0's claim after steady state: %+v; want released, kept as a record", c)
	}
	if code, _ := post(t, url, "steady-state", "nobody", "default", true); code != 200 {
		t.Errorf("unlock of an unknown client: %d; want 200 (nothing held)", code)
	}
	if code, _ := post(t, url, "pre-reboot", "mid-w-1", "default", true); code != 200 {
		t.Fatalf("w-1 once w-0 gave its slot back: %d", code)
	}
	// w-1 never reports steady state: its slot lapses with its lease.
	clk.t = clk.t.Add(time.Hour + time.Second)
	if code, e := post(t, url, "pre-reboot", "mid-w-2", "default", true); code != 200 {
		t.Errorf("w-2 after w-1's lease lapsed: %d %+v; want the slot", code, e)
	}
}

// The budget counts what apply counts: a cordoned or NotReady node of the pool, a live
// apply's claim; and nothing is granted while an apply holding the state lock runs.
func TestSlotsCountTheSameBudget(t *testing.T) {
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		change func(st *fakeStore)
		lock   *state.LockStatus
		kind   string
	}{
		{"a cordoned node", func(st *fakeStore) { st.nodes[1].Unschedulable = true }, nil, KindSemaphore},
		{"a NotReady node", func(st *fakeStore) { st.nodes[2].Ready = false }, nil, KindSemaphore},
		{"a live apply's claim", func(st *fakeStore) {
			st.nodes[1].Claim = &model.Claim{Apply: "A1", Since: now, Expires: now.Add(time.Minute)}
		}, nil, KindSemaphore},
		{"an apply's claim on the node itself", func(st *fakeStore) {
			st.nodes[0].Claim = &model.Claim{Apply: "A1", Since: now, Expires: now.Add(time.Minute)}
		}, nil, KindClaimed},
		{"an apply holding the state lock", func(*fakeStore) {}, &state.LockStatus{Holder: state.LockInfo{ID: "L", Operation: "apply", Who: "me@here"}, Alive: true}, KindApply},
		{"a lapsed apply claim", func(st *fakeStore) {
			st.nodes[1].Claim = &model.Claim{Apply: "A1", Since: now.Add(-time.Hour), Expires: now.Add(-time.Minute)}
		}, nil, ""},
		// kured's lock (read by the provider from kured's DaemonSet) is a claim like another.
		{"kured's lock on another node, no TTL", func(st *fakeStore) {
			st.nodes[1].Claim = &model.Claim{Apply: model.KuredPrefix + "w-1", Host: "DaemonSet kube-system/kured", Since: now.Add(-48 * time.Hour)}
		}, nil, KindSemaphore},
		{"kured's lock on the node itself", func(st *fakeStore) {
			st.nodes[0].Claim = &model.Claim{Apply: model.KuredPrefix + "w-0", Since: now, Expires: now.Add(time.Minute)}
		}, nil, KindClaimed},
		{"kured's lock on another node past its TTL", func(st *fakeStore) {
			st.nodes[1].Claim = &model.Claim{Apply: model.KuredPrefix + "w-1", Since: now.Add(-time.Hour), Expires: now.Add(-time.Minute)}
		}, nil, ""},
		{"kured's lapsed lock on the node itself, over a record", func(st *fakeStore) {
			st.nodes[0].OwnClaim = &model.Claim{Apply: "A0", Since: now.Add(-time.Hour), Released: now.Add(-time.Hour)}
			st.nodes[0].Claim = &model.Claim{Apply: model.KuredPrefix + "w-0", Since: now.Add(-time.Hour), Expires: now.Add(-time.Minute)}
		}, nil, ""},
		{"a plan holding the state lock", func(*fakeStore) {}, &state.LockStatus{Holder: state.LockInfo{ID: "L", Operation: "plan"}, Alive: true}, ""},
		// An apply leaves its claims under the lock on the nodes as records: they end with
		// the lock, not their expiry; a claim of another state's apply ends with its expiry.
		{"a claim left under a lock of this state no longer held", func(st *fakeStore) {
			st.nodes[1].Claim = &model.Claim{Apply: "A2", Lock: "L", State: "mine", Since: now, Expires: now.Add(time.Minute)}
		}, nil, ""},
		{"a claim under another state's lock, not expired", func(st *fakeStore) {
			st.nodes[1].Claim = &model.Claim{Apply: "A3", Lock: "M", State: "theirs", Since: now, Expires: now.Add(time.Minute)}
		}, nil, KindSemaphore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := fleet()
			tc.change(st)
			s := &Slots{Store: st, Pools: pools(), Lease: time.Hour, Now: func() time.Time { return now }, StateLock: lockView{tc.lock},
				Lineage: func(context.Context) (string, error) { return "mine", nil }}
			err := s.Lock(context.Background(), Params{ID: "mid-w-0", Group: "default"})
			if tc.kind == "" {
				if err != nil {
					t.Fatalf("lock: %v; want the slot", err)
				}
				return
			}
			e, ok := err.(*Error)
			if !ok || e.Kind != tc.kind {
				t.Fatalf("lock: %v; want %s", err, tc.kind)
			}
			if c := st.claim("w-0"); c != nil && c.Apply == model.FleetLockPrefix+"mid-w-0" {
				t.Errorf("w-0 claimed though refused: %+v", c)
			}
		})
	}
}

// A claimer that takes a slot of the pool between this server's look and its claim (an
// apply without the lock) is seen on the look after the claim: the claim is given back
// as it was, and the client refused.
func TestSlotsGiveBackWhenAnotherClaimedMeanwhile(t *testing.T) {
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	st := fleet()
	st.afterSwap = func(f *fakeStore) {
		f.mu.Lock()
		f.nodes[1].Claim = &model.Claim{Apply: "A1", Since: now, Expires: now.Add(time.Minute)}
		f.mu.Unlock()
	}
	s := &Slots{Store: st, Pools: pools(), Lease: time.Hour, Now: func() time.Time { return now }}
	err := s.Lock(context.Background(), Params{ID: "mid-w-0", Group: "default"})
	if e, ok := err.(*Error); !ok || e.Kind != KindSemaphore {
		t.Fatalf("lock: %v; want semaphore full", err)
	}
	if c := st.claim("w-0"); c != nil {
		t.Errorf("w-0's claim not given back: %+v", c)
	}
}

type lockView struct{ st *state.LockStatus }

func (l lockView) LockStatus(context.Context) (*state.LockStatus, error) { return l.st, nil }
