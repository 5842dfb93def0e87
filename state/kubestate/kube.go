// Package kubestate is the "kubernetes" state backend: mcp's state kept as objects in one
// namespace of the cluster it manages, so that several operators (and several `mcp serve`
// replicas) share one state without a shared disk.
//
//	Secret mcp-<rendered name>     one per rendered config, immutable, data rendered.json
//	Secret mcp-state               the head: lineage, serial, pointers, folded journal
//	                               (data state.json) and the journal of a running apply
//	                               (data journal, one JSON line per finished step)
//	Secret mcp-state-chunk-<hash>  pieces of a head too large for one object, immutable,
//	                               named by the hash of their content
//	Lease  mcp-state-lock          the state lock (see lock.go)
//
// Every object carries app.kubernetes.io/managed-by=mcp and mcpfleet.io/kind. Rendered
// configs and chunks are created before the head that names them, so a reader that sees a
// head finds everything it names. The head is updated with its resourceVersion: a write
// based on a head that someone else has since changed fails with ErrConflict.
package kubestate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/retry"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/kubeapi/kubeclient"
	"github.com/mcpfleet/mcp/kubeapi/kubeconfig"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// Data keys of the head Secret and of chunk Secrets.
const (
	// KeyState holds the state JSON when it fits in the head.
	KeyState = "state.json"
	// KeyChunks lists, one per line, the chunk Secrets whose data concatenated is the
	// state JSON (when it does not fit).
	KeyChunks = "chunks"
	// KeySum is the hex SHA-256 of the whole state JSON.
	KeySum = "state.sha256"
	// KeyJournal holds the journal of a running apply, one JSON record per line.
	KeyJournal = "journal"
	// KeyChunk is the data key of a chunk Secret.
	KeyChunk = "chunk"
)

// Values of protocol.KindLabel.
const (
	KindState    = "state"
	KindChunk    = "state-chunk"
	KindRendered = "rendered"
)

// ChunkPrefix starts the name of every chunk Secret.
const ChunkPrefix = protocol.StateSecret + "-chunk-"

// DefaultNamespace is used when the state block names none.
const DefaultNamespace = "mcp-system"

// ErrConflict says that the head was changed by another writer since this backend read it.
var ErrConflict = state.ErrConflict

// ManagedSelector selects every Secret this backend writes.
func ManagedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{protocol.ManagedByLabel: protocol.ManagedByValue})
}

// Options tune the backend; the zero value is the default.
type Options struct {
	// LeaseDuration is how long a lock lives without renewal (default 15s). The holder
	// renews it every third of that.
	LeaseDuration time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ChunkSize is the largest state JSON kept in the head itself, and the size of the
	// chunks a larger one is cut into (default 512 KiB; Secrets hold at most 1 MiB).
	ChunkSize int
	// JournalLimit is the journal size past which AppendJournal folds the journal into
	// the state (default 256 KiB).
	JournalLimit int
}

// Backend stores the state in a namespace. It remembers the head's resourceVersion from
// its last read or write, so that Write refuses to overwrite a state it has not seen.
type Backend struct {
	cs   kubeclient.Interface
	ns   string
	opts Options

	mu     sync.Mutex
	headRV string          // resourceVersion of the head as this backend last saw it
	seen   bool            // headRV is known (a Read or Write happened)
	stored map[string]bool // rendered configs known to be stored

	appendMu sync.Mutex // one AppendJournal at a time
}

// New returns a backend on the namespace through cs.
func New(cs kubeclient.Interface, namespace string, opts Options) *Backend {
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = 15 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 512 << 10
	}
	if opts.JournalLimit <= 0 {
		opts.JournalLimit = 256 << 10
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return &Backend{cs: cs, ns: namespace, opts: opts, stored: map[string]bool{}}
}

// Spec declares the Kubernetes backend: state { backend = "kubernetes", namespace,
// kubeconfig, context }, the cluster found as the kubernetes provider finds it.
var Spec = state.BackendSpec{
	BlockSpec: model.BlockSpec{Name: "kubernetes",
		Settings: append(slices.Clip(kubeconfig.Settings), kubeconfig.NamespaceSetting(DefaultNamespace))},
	Open: func(s model.Settings) (state.Backend, error) {
		b, err := Open(s)
		if err != nil {
			return nil, err
		}
		return b, nil
	},
}

// Open builds a backend from the state block's settings (Spec).
func Open(s model.Settings) (*Backend, error) {
	cfg, err := kubeconfig.FromSettings(s, "finding the cluster for the kubernetes state backend")
	if err != nil {
		return nil, err
	}
	// Every request has a deadline, so that an API server that stops answering fails the
	// state's reads, writes and journal appends with a clear error instead of hanging.
	kubeconfig.WithRequestTimeout(cfg, kubeconfig.DefaultRequestTimeout)
	cs, err := kubeclient.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes state backend: %w", err)
	}
	return New(cs, s.Str("namespace"), Options{}), nil
}

// Client is the clientset the backend uses.
func (b *Backend) Client() kubeclient.Interface { return b.cs }

// Namespace is the namespace the state lives in.
func (b *Backend) Namespace() string { return b.ns }

func (b *Backend) secrets() typedcorev1.SecretInterface { return b.cs.CoreV1().Secrets(b.ns) }

func (b *Backend) where() string { return "secret " + b.ns + "/" + protocol.StateSecret }

func objectLabels(kind string) map[string]string {
	return map[string]string{protocol.ManagedByLabel: protocol.ManagedByValue, protocol.KindLabel: kind}
}

// Read returns the state: the head, its chunks, every rendered config and the journal
// replayed. An absent head reads as an empty state with no lineage.
func (b *Backend) Read(ctx context.Context) (*state.State, error) {
	for attempt := 0; ; attempt++ {
		st, rv, err := b.readHead(ctx)
		// A chunk that is gone means the head moved on while we read: read it again.
		if apierrors.IsNotFound(err) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, err
		}
		if st.Rendered, err = b.readRendered(ctx); err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.headRV, b.seen = rv, true
		for n := range st.Rendered {
			b.stored[n] = true
		}
		b.mu.Unlock()
		return st, nil
	}
}

func (b *Backend) readHead(ctx context.Context) (*state.State, string, error) {
	head, err := b.secrets().Get(ctx, protocol.StateSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &state.State{Version: state.FormatVersion, Pointers: map[string]string{}}, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading state (%s): %w", b.where(), err)
	}
	st, err := Decode(head, b.chunkReader(ctx))
	if err != nil {
		return nil, "", fmt.Errorf("reading state (%s): %w", b.where(), err)
	}
	return st, head.ResourceVersion, nil
}

// Decode reads a head Secret into a state (without rendered configs), fetching its chunks
// through chunk and replaying its journal. A torn last journal line is ignored.
func Decode(head *corev1.Secret, chunk func(name string) ([]byte, error)) (*state.State, error) {
	raw, present := head.Data[KeyState]
	src := fmt.Sprintf("data key %q", KeyState)
	if names := strings.Fields(string(head.Data[KeyChunks])); len(names) > 0 {
		src = fmt.Sprintf("the %d chunks data key %q names", len(names), KeyChunks)
		raw = nil
		for _, n := range names {
			c, err := chunk(n)
			if err != nil {
				return nil, fmt.Errorf("state chunk %s: %w", n, err)
			}
			raw = append(raw, c...)
		}
		present = true
	}
	if want := string(head.Data[KeySum]); want != "" && want != sum(raw) {
		return nil, fmt.Errorf("state JSON does not match its digest %s (a damaged or half-written chunk)", want)
	}
	st := &state.State{Version: state.FormatVersion, Pointers: map[string]string{}}
	if present {
		// Present but empty or null is damage, not a fresh state (see state.Unmarshal); a
		// head with neither key is one AppendJournal created before any Write.
		var err error
		if st, err = state.Unmarshal(raw); err != nil {
			return nil, fmt.Errorf("decoding state (%s): %w", src, err)
		}
	}
	err := st.ReplayJournal(bytes.NewReader(head.Data[KeyJournal]))
	var je *state.JournalError
	if errors.As(err, &je) {
		return nil, fmt.Errorf("journal (data key %q), %w; it lists the steps an interrupted apply "+
			"finished, one JSON record per line (see it with kubectl get secret -n %s %s -o "+
			"jsonpath='{.data.journal}' | base64 -d): fix or delete that line, or remove the key "+
			"(the next mcp plan then no longer knows which steps of those nodes finished and plans "+
			"them again, drains and reboots included)", KeyJournal, je, head.Namespace, head.Name)
	}
	return st, err
}

// DecodeRendered reads and verifies a rendered config's Secret: the config's name must be
// the one its content gives it, its Secret's (mcp-<name>) and its label's (names too long
// for a label value have none). A stored config is served and planned from, so one changed
// or copied after it was stored must not pass for the config it names.
func DecodeRendered(s *corev1.Secret) (*model.Rendered, error) {
	where := "secret " + s.Namespace + "/" + s.Name
	fix := fmt.Sprintf("delete it (kubectl delete secret -n %s %s) and run mcp apply to store it again", s.Namespace, s.Name)
	r := new(model.Rendered)
	if err := json.Unmarshal(s.Data[protocol.RenderedKey], r); err != nil {
		return nil, fmt.Errorf("rendered config in %s (data key %q) is not a rendered config (%v): it was damaged after it was stored; %s",
			where, protocol.RenderedKey, err, fix)
	}
	if want := protocol.RenderedSecretName(r.Name); s.Name != want {
		return nil, fmt.Errorf("rendered config in %s holds the config named %q, whose Secret is %s: it was copied or changed after it was stored; %s",
			where, r.Name, want, fix)
	}
	if l, ok := s.Labels[protocol.RenderedLabel]; ok && l != r.Name {
		return nil, fmt.Errorf("rendered config in %s has the label %s=%s, but holds the config named %q: it was changed after it was stored; %s",
			where, protocol.RenderedLabel, l, r.Name, fix)
	}
	if want := content.Name(r); want != r.Name {
		return nil, fmt.Errorf("rendered config %s in %s does not match its content (which names it %s): it was changed after it was stored; %s",
			r.Name, where, want, fix)
	}
	content.Settle(r) // one stored by an older mcp, with its Ignition config beside its content
	return r, nil
}

// RenderedSelector selects the Secrets of rendered configs.
func RenderedSelector() labels.Selector { return labels.SelectorFromSet(objectLabels(KindRendered)) }

// eachSecret runs fn on every Secret of the kind in the namespace, through client-go's
// pager (100 a page; a full LIST when the continue token expires half-way).
func (b *Backend) eachSecret(ctx context.Context, kind, what string, fn func(*corev1.Secret) error) error {
	pg := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return b.secrets().List(ctx, o)
	})
	pg.PageSize = 100
	opts := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(objectLabels(kind)).String()}
	err := pg.EachListItem(ctx, opts, func(o runtime.Object) error { return fn(o.(*corev1.Secret)) })
	if err != nil {
		return fmt.Errorf("listing %s in namespace %s: %w", what, b.ns, err)
	}
	return nil
}

func (b *Backend) readRendered(ctx context.Context) (map[string]*model.Rendered, error) {
	out := map[string]*model.Rendered{}
	err := b.eachSecret(ctx, KindRendered, "rendered configs", func(s *corev1.Secret) error {
		r, err := DecodeRendered(s)
		if err != nil {
			return err
		}
		out[r.Name] = r
		return nil
	})
	return out, err
}

// Write stores the rendered configs (each created once, never changed), then the head —
// with chunks created before it when the state is large — and then deletes the chunks
// the old head used. The journal is folded into s and cleared.
func (b *Backend) Write(ctx context.Context, s *state.State) error {
	if err := b.writeRendered(ctx, s.Rendered); err != nil {
		return err
	}
	head, err := b.secrets().Get(ctx, protocol.StateSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		head, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("writing state (%s): %w", b.where(), err)
	}
	b.mu.Lock()
	seen, rv := b.seen, b.headRV
	b.mu.Unlock()
	cur := ""
	if head != nil {
		cur = head.ResourceVersion
	}
	if seen && cur != rv {
		return fmt.Errorf("writing state (%s): %w since this run read it (resourceVersion %q, now %q); run again",
			b.where(), ErrConflict, rv, cur)
	}
	return b.putHead(ctx, head, s, nil)
}

// putHead replaces the head (head nil: creates it) with st and journal, creating chunks
// first and deleting the old head's unused chunks after.
func (b *Backend) putHead(ctx context.Context, head *corev1.Secret, st *state.State, journal []byte) error {
	if err := st.Check(); err != nil {
		return fmt.Errorf("writing state (%s): refusing a state that could not be read back: %w", b.where(), err)
	}
	data, chunks, err := b.encode(ctx, st)
	if err != nil {
		return err
	}
	if len(journal) > 0 {
		data[KeyJournal] = journal
	}
	var old []string
	var out *corev1.Secret
	if head == nil {
		out, err = b.secrets().Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: protocol.StateSecret, Namespace: b.ns, Labels: objectLabels(KindState)},
			Type:       corev1.SecretTypeOpaque, Data: data}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("writing state (%s): %w: it was created meanwhile", b.where(), ErrConflict)
		}
	} else {
		old = strings.Fields(string(head.Data[KeyChunks]))
		h := head.DeepCopy()
		h.Labels = objectLabels(KindState)
		h.Data = data
		out, err = b.secrets().Update(ctx, h, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return fmt.Errorf("writing state (%s): %w (resourceVersion %s is not the latest; run again): %w",
				b.where(), ErrConflict, head.ResourceVersion, err)
		}
	}
	if err != nil {
		return fmt.Errorf("writing state (%s): %w", b.where(), err)
	}
	b.mu.Lock()
	b.headRV, b.seen = out.ResourceVersion, true
	b.mu.Unlock()
	var errs []error
	for _, n := range old {
		if slices.Contains(chunks, n) {
			continue
		}
		if err := b.secrets().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting old state chunk %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// encode gives the head's data for st, creating the chunk Secrets it names when the state
// JSON is larger than the chunk size.
func (b *Backend) encode(ctx context.Context, st *state.State) (map[string][]byte, []string, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding state: %w", err)
	}
	data := map[string][]byte{KeySum: []byte(sum(raw))}
	if len(raw) <= b.opts.ChunkSize {
		data[KeyState] = raw
		return data, nil, nil
	}
	var names []string
	for piece := range slices.Chunk(raw, b.opts.ChunkSize) {
		name := ChunkPrefix + sum(piece)
		immutable := true
		_, err := b.secrets().Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.ns, Labels: objectLabels(KindChunk)},
			Type:       corev1.SecretTypeOpaque, Immutable: &immutable,
			Data: map[string][]byte{KeyChunk: piece}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) { // same name, same content
			return nil, nil, fmt.Errorf("storing state chunk %s in namespace %s: %w", name, b.ns, err)
		}
		names = append(names, name)
	}
	data[KeyChunks] = []byte(strings.Join(names, "\n"))
	return data, names, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func (b *Backend) writeRendered(ctx context.Context, rendered map[string]*model.Rendered) error {
	names := make([]string, 0, len(rendered))
	for n := range rendered {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		b.mu.Lock()
		known := b.stored[n]
		b.mu.Unlock()
		if known {
			continue
		}
		raw, err := json.Marshal(rendered[n])
		if err != nil {
			return fmt.Errorf("encoding rendered config %s: %w", n, err)
		}
		l := objectLabels(KindRendered)
		if len(validation.IsValidLabelValue(n)) == 0 {
			l[protocol.RenderedLabel] = n
		}
		immutable := true
		_, err = b.secrets().Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: protocol.RenderedSecretName(n), Namespace: b.ns, Labels: l},
			Type:       corev1.SecretTypeOpaque, Immutable: &immutable,
			Data: map[string][]byte{protocol.RenderedKey: raw}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) { // immutable: same name, same content
			return fmt.Errorf("storing rendered config %s (secret %s/%s): %w", n, b.ns, protocol.RenderedSecretName(n), err)
		}
		b.mu.Lock()
		b.stored[n] = true
		b.mu.Unlock()
	}
	return nil
}

// PublishRendered stores r as Write stores a rendered config (created once, never
// changed), alone: state.RenderedPublisher.
func (b *Backend) PublishRendered(ctx context.Context, r *model.Rendered) error {
	return b.writeRendered(ctx, map[string]*model.Rendered{r.Name: r})
}

// DeleteRendered deletes the rendered configs' Secrets.
func (b *Backend) DeleteRendered(ctx context.Context, names []string) error {
	for _, n := range names {
		err := b.secrets().Delete(ctx, protocol.RenderedSecretName(n), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting rendered config %s (secret %s/%s): %w", n, b.ns, protocol.RenderedSecretName(n), err)
		}
		b.mu.Lock()
		delete(b.stored, n)
		b.mu.Unlock()
	}
	return nil
}

// PruneOrphans deletes the state chunks the head does not name: a write cut off after its
// chunks were created and before the head was, or an old chunk whose deletion failed.
// Under the lock no write is under way, so no chunk is about to be named.
func (b *Backend) PruneOrphans(ctx context.Context, dryRun bool) ([]string, error) {
	head, err := b.secrets().Get(ctx, protocol.StateSecret, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading state (%s): %w", b.where(), err)
	}
	named := map[string]bool{}
	if head != nil {
		for _, n := range strings.Fields(string(head.Data[KeyChunks])) {
			named[n] = true
		}
	}
	var orphans []string
	err = b.eachSecret(ctx, KindChunk, "state chunks", func(c *corev1.Secret) error {
		if !named[c.Name] {
			orphans = append(orphans, c.Name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(orphans)
	if dryRun {
		return orphans, nil
	}
	for _, n := range orphans {
		if err := b.secrets().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting orphaned state chunk %s: %w", n, err)
		}
	}
	return orphans, nil
}

// appendBackoff paces a journal append's retries on conflict: applies without the lock
// write the head between each other's appends (their records, the state with its step
// times), so a handful of 10 ms tries ran out under two racing applies; these span about
// 4 s, jittered so that the two do not retry in step.
var appendBackoff = wait.Backoff{Steps: 12, Duration: 10 * time.Millisecond, Factor: 1.6, Jitter: 0.5, Cap: time.Second}

// AppendJournal appends r to the head's journal (read, modify, update with the
// resourceVersion; retried on conflict). A journal grown past the limit is folded into the
// state first, so the head stays well under the size of one object.
func (b *Backend) AppendJournal(ctx context.Context, r state.JournalRecord) error {
	// One append at a time: concurrent ones would only conflict on the head and retry.
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	err = retry.OnError(appendBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		head, err := b.secrets().Get(ctx, protocol.StateSecret, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			out, err := b.secrets().Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: protocol.StateSecret, Namespace: b.ns, Labels: objectLabels(KindState)},
				Type:       corev1.SecretTypeOpaque, Data: map[string][]byte{KeyJournal: line}}, metav1.CreateOptions{})
			if err == nil {
				b.remember(out)
			}
			return err
		}
		if err != nil {
			return err
		}
		journal := head.Data[KeyJournal]
		if len(journal)+len(line) > b.opts.JournalLimit {
			return b.fold(ctx, head, r)
		}
		h := head.DeepCopy()
		if h.Data == nil {
			h.Data = map[string][]byte{}
		}
		h.Data[KeyJournal] = append(slices.Clip(journal), line...)
		out, err := b.secrets().Update(ctx, h, metav1.UpdateOptions{})
		if err == nil {
			b.remember(out)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("appending to the state journal (%s): %w", b.where(), err)
	}
	return nil
}

// chunkReader reads a chunk of the state from its Secret.
func (b *Backend) chunkReader(ctx context.Context) func(name string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		c, err := b.secrets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return c.Data[KeyChunk], nil
	}
}

// fold writes the head's state with its journal and r folded in, and an empty journal.
func (b *Backend) fold(ctx context.Context, head *corev1.Secret, r state.JournalRecord) error {
	st, err := Decode(head, b.chunkReader(ctx))
	if err != nil {
		return err
	}
	if st.Lineage == "" {
		st.Lineage = state.New().Lineage // a head AppendJournal created: no state was written yet
	}
	st.ApplyRecord(r)
	return b.putHead(ctx, head, st, nil)
}

func (b *Backend) remember(s *corev1.Secret) {
	b.mu.Lock()
	b.headRV, b.seen = s.ResourceVersion, true
	b.mu.Unlock()
}
