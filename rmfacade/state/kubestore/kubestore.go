// Package kubestore keeps the ResourceManager's durable tables in the
// Kubernetes API server, so that the state outlives the node weft-rm runs
// on and a standby can take over (YARN's ZKRMStateStore, with etcd behind
// the API server in ZooKeeper's place).
//
// The layout is a write-ahead log with snapshots, each object a Secret
// (application submissions carry the users' credentials):
//
//	<name>-log-<seq>       one committed transaction (all its ops, gzipped)
//	<name>-snap-<seq>-<i>  chunk i of the records as of log entry seq
//	<name>-snap-<seq>      the snapshot's manifest, written after its chunks
//
// One object per transaction keeps a transaction atomic, which one object
// per record could not (the API server has no multi-object writes). Log
// entries are only ever created, never updated: a writer that finds its
// next sequence number taken has been superseded and stops writing — the
// fencing YARN gets from ZooKeeper's fencing node. After every
// CompactEvery entries the records are written as a snapshot and the log
// before it deleted, so a load reads one snapshot and a short log.
package kubestore

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/translator/wellknown"
)

// dataKey is the key of a store Secret's records; the Secrets' labels,
// annotations and type are wellknown's RMState words.
const dataKey = "records.json.gz"

const (
	recordLog      = "log"
	recordSnapshot = "snapshot"
	recordChunk    = "chunk"
)

// StoreName names this store in the RM's REST cluster info
// (rmStateStoreName, where YARN names its ZKRMStateStore class).
const StoreName = "weft.rmfacade.state.kubestore"

// ErrFenced is returned by Commit once another writer has taken the log
// (or MayWrite said no): this store will write nothing more.
var ErrFenced = errors.New("kubestore: another ResourceManager has taken over the state store")

// Options configures a Store. Zero values take the documented defaults.
type Options struct {
	// Namespace holds the Secrets (required).
	Namespace string
	// Name prefixes the Secrets' names (required; e.g. "<cluster-id>-rm-state").
	Name string
	// MayWrite, when set, is asked before every write; false fences the
	// store (leader election: a deposed leader stops writing).
	MayWrite func() bool
	// CompactEvery is how many log entries are written between snapshots
	// (default 500).
	CompactEvery int
	// MaxObjectBytes bounds one Secret's data (default 900 KiB, under the
	// API server's 1 MiB). A transaction larger than this, compressed, is
	// refused, as YARN's ZooKeeper store refuses an application larger than
	// yarn.resourcemanager.zk-max-znode-size.bytes.
	MaxObjectBytes int
	// WriteTimeout bounds the retries of one commit before the store gives
	// up and fences itself (default 15s).
	WriteTimeout time.Duration
	Logger       *slog.Logger
}

func (o *Options) setDefaults() {
	if o.CompactEvery <= 0 {
		o.CompactEvery = 500
	}
	if o.MaxObjectBytes <= 0 {
		o.MaxObjectBytes = 900 << 10
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Store implements state.Durable over Secrets.
type Store struct {
	client kubernetes.Interface
	opts   Options

	mu sync.Mutex
	// tables mirrors what is stored, for the next snapshot.
	tables map[string]map[string][]byte
	// next is the sequence number the next commit takes; loaded is set
	// once Load has read the log.
	next   int64
	loaded bool
	// snapshots are the stored snapshots' sequence numbers, oldest first;
	// firstLog is the oldest log entry that may still exist.
	snapshots []int64
	firstLog  int64
	// compacting is set while a snapshot is being written.
	compacting bool

	fenceOnce sync.Once
	fenced    chan struct{}
	// wg counts compactions in flight.
	wg sync.WaitGroup
}

var _ state.Durable = (*Store)(nil)

// New returns a store over client; Load reads it.
func New(client kubernetes.Interface, opts Options) (*Store, error) {
	opts.setDefaults()
	if opts.Namespace == "" || opts.Name == "" {
		return nil, errors.New("kubestore: namespace and name are required")
	}
	return &Store{client: client, opts: opts, tables: map[string]map[string][]byte{}, fenced: make(chan struct{})}, nil
}

// Open loads a store over client into a state.Store.
func Open(client kubernetes.Interface, opts Options) (*state.Store, *Store, error) {
	d, err := New(client, opts)
	if err != nil {
		return nil, nil, err
	}
	s, err := state.Open(d)
	if err != nil {
		return nil, nil, err
	}
	return s, d, nil
}

// Fenced is closed when the store stops writing for good: another writer
// took the log, MayWrite said no, or the API server refused a write for
// longer than WriteTimeout. A server over it must stop serving.
func (s *Store) Fenced() <-chan struct{} { return s.fenced }

func (s *Store) fence(reason error) error {
	s.fenceOnce.Do(func() {
		s.opts.Logger.Error("state store fenced: this ResourceManager writes nothing more", "err", reason)
		close(s.fenced)
	})
	return reason
}

// entry is one record in a log entry or a snapshot chunk; V is null for a
// deletion.
type entry struct {
	T string          `json:"t"`
	K string          `json:"k"`
	V json.RawMessage `json:"v"`
}

// Load implements state.Durable: it reads the newest complete snapshot and
// the log after it.
func (s *Store) Load(fn func(table, key string, value []byte) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	objs, err := s.list(ctx)
	if err != nil {
		return err
	}
	logs := map[int64]*corev1.Secret{}
	chunks := map[string]*corev1.Secret{}
	var snaps []*corev1.Secret
	for i := range objs {
		o := &objs[i]
		switch o.Labels[wellknown.LabelRMStateRecord] {
		case recordLog:
			seq, err := seqOf(o)
			if err != nil {
				return err
			}
			logs[seq] = o
		case recordSnapshot:
			snaps = append(snaps, o)
		case recordChunk:
			chunks[o.Name] = o
		}
	}
	// The newest snapshot whose chunks are all there; one whose manifest
	// exists always has them (chunks are written first), so this is the
	// newest manifest unless someone deleted objects by hand.
	slices.SortFunc(snaps, func(a, b *corev1.Secret) int { return strings.Compare(b.Name, a.Name) })
	var base int64 = -1
	tables := map[string]map[string][]byte{}
	for _, snap := range snaps {
		seq, err := seqOf(snap)
		if err != nil {
			return err
		}
		n, err := wellknown.ParseCount(snap.Annotations[wellknown.AnnotationRMStateChunks])
		if err != nil {
			return fmt.Errorf("kubestore: snapshot %s: chunk count: %w", snap.Name, err)
		}
		t, ok, err := s.readChunks(chunks, seq, n)
		if err != nil {
			return err
		}
		if ok {
			base, tables = seq, t
			break
		}
		s.opts.Logger.Warn("state snapshot incomplete, trying an older one", "snapshot", snap.Name)
	}
	oldest := base + 1
	for seq := range logs {
		oldest = min(oldest, seq)
		if seq <= base {
			delete(logs, seq) // compacted; its deletion did not finish
		}
	}
	seqs := slices.Sorted(maps.Keys(logs))
	next := base + 1
	for _, seq := range seqs {
		if seq != next {
			return fmt.Errorf("kubestore: log entry %d missing (have %d after snapshot %d): the store is damaged", next, seq, base)
		}
		entries, err := decode(logs[seq].Data[dataKey])
		if err != nil {
			return fmt.Errorf("kubestore: %s: %w", logs[seq].Name, err)
		}
		apply(tables, entries)
		next++
	}
	for table, rows := range tables {
		for key, value := range rows {
			if err := fn(table, key, value); err != nil {
				return err
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tables, s.next, s.loaded = tables, next, true
	s.firstLog = oldest
	s.snapshots = nil
	for _, snap := range snaps {
		seq, _ := seqOf(snap)
		s.snapshots = append(s.snapshots, seq)
	}
	slices.Sort(s.snapshots)
	s.opts.Logger.Info("state loaded from the API server", "snapshot", base, "logEntries", len(seqs), "next", next)
	return nil
}

func (s *Store) readChunks(chunks map[string]*corev1.Secret, seq int64, n int) (map[string]map[string][]byte, bool, error) {
	tables := map[string]map[string][]byte{}
	for i := range n {
		c, ok := chunks[s.chunkName(seq, i)]
		if !ok {
			return nil, false, nil
		}
		entries, err := decode(c.Data[dataKey])
		if err != nil {
			return nil, false, fmt.Errorf("kubestore: %s: %w", c.Name, err)
		}
		apply(tables, entries)
	}
	return tables, true, nil
}

// list reads every object of the store, a page at a time (a snapshot's
// chunks may be large).
func (s *Store) list(ctx context.Context) ([]corev1.Secret, error) {
	var out []corev1.Secret
	opts := metav1.ListOptions{LabelSelector: wellknown.LabelRMState + "=" + s.opts.Name, Limit: 50}
	for {
		page, err := s.client.CoreV1().Secrets(s.opts.Namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("kubestore: list %s/%s: %w", s.opts.Namespace, s.opts.Name, err)
		}
		out = append(out, page.Items...)
		if page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
}

// Commit implements state.Durable: the ops become one new log entry.
func (s *Store) Commit(ops []state.Op) error {
	select {
	case <-s.fenced:
		return ErrFenced
	default:
	}
	if s.opts.MayWrite != nil && !s.opts.MayWrite() {
		return s.fence(ErrFenced)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded {
		return errors.New("kubestore: commit before load")
	}
	entries := make([]entry, 0, len(ops))
	for _, op := range ops {
		if op.Value != nil && !json.Valid(op.Value) {
			return fmt.Errorf("kubestore: %s/%s: value is not JSON", op.Table, op.Key)
		}
		entries = append(entries, entry{T: op.Table, K: op.Key, V: op.Value})
	}
	data, err := encode(entries)
	if err != nil {
		return err
	}
	if len(data) > s.opts.MaxObjectBytes {
		return fmt.Errorf("kubestore: a transaction of %d bytes (compressed) exceeds the store's limit of %d", len(data), s.opts.MaxObjectBytes)
	}
	seq := s.next
	if err := s.createLog(seq, data); err != nil {
		return err
	}
	s.next++
	apply(s.tables, entries)
	last := int64(-1)
	if len(s.snapshots) > 0 {
		last = s.snapshots[len(s.snapshots)-1]
	}
	if seq-last >= int64(s.opts.CompactEvery) && !s.compacting {
		s.compacting = true
		tables := make(map[string]map[string][]byte, len(s.tables))
		for t, rows := range s.tables {
			tables[t] = maps.Clone(rows)
		}
		s.wg.Add(1)
		go s.compact(seq, tables)
	}
	return nil
}

// createLog creates log entry seq, retrying what the API server did not
// answer. Finding the entry there already is success when it is this
// write's own (an earlier try landed), and the end of this store's writing
// when it is not.
func (s *Store) createLog(seq int64, data []byte) error {
	writer := nonce()
	obj := s.secret(s.logName(seq), recordLog, seq, data)
	obj.Annotations[wellknown.AnnotationRMStateWriter] = writer
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout)
	defer cancel()
	secrets := s.client.CoreV1().Secrets(s.opts.Namespace)
	backoff := 100 * time.Millisecond
	for {
		_, err := secrets.Create(ctx, obj, metav1.CreateOptions{})
		if err == nil {
			return nil
		}
		if apierrors.IsAlreadyExists(err) {
			got, gerr := secrets.Get(ctx, obj.Name, metav1.GetOptions{})
			if gerr == nil && got.Annotations[wellknown.AnnotationRMStateWriter] == writer {
				return nil
			}
			if gerr == nil {
				return s.fence(fmt.Errorf("%w: log entry %d was written by another ResourceManager", ErrFenced, seq))
			}
			err = gerr
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsRequestEntityTooLargeError(err) {
			return fmt.Errorf("kubestore: write log entry %d: %w", seq, err)
		}
		select {
		case <-ctx.Done():
			return s.fence(fmt.Errorf("%w: log entry %d not written within %s: %v", ErrFenced, seq, s.opts.WriteTimeout, err))
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// compact writes a snapshot as of log entry seq, then deletes the log up
// to it and the older snapshots. A crash anywhere leaves a store Load
// reads: the manifest is written last, and deletions follow it.
func (s *Store) compact(seq int64, tables map[string]map[string][]byte) {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := s.writeSnapshot(ctx, seq, tables)
	s.mu.Lock()
	s.compacting = false
	var oldSnaps []int64
	from := s.firstLog
	if err == nil {
		oldSnaps = s.snapshots
		s.snapshots = []int64{seq}
		s.firstLog = seq + 1
	}
	s.mu.Unlock()
	if err != nil {
		s.opts.Logger.Warn("state snapshot not written; the log keeps growing until the next one", "seq", seq, "err", err)
		return
	}
	secrets := s.client.CoreV1().Secrets(s.opts.Namespace)
	del := func(name string) {
		if err := secrets.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			s.opts.Logger.Warn("state compaction: delete", "object", name, "err", err)
		}
	}
	for _, old := range oldSnaps {
		del(s.snapName(old))
	}
	for q := from; q <= seq && ctx.Err() == nil; q++ {
		del(s.logName(q))
	}
	// Chunks last: a snapshot's manifest never outlives its chunks.
	if len(oldSnaps) > 0 {
		objs, err := s.list(ctx)
		if err != nil {
			return
		}
		for _, o := range objs {
			if n, _ := seqOf(&o); o.Labels[wellknown.LabelRMStateRecord] == recordChunk && n < seq {
				del(o.Name)
			}
		}
	}
	s.opts.Logger.Debug("state compacted", "snapshot", seq)
}

func (s *Store) writeSnapshot(ctx context.Context, seq int64, tables map[string]map[string][]byte) error {
	var chunks [][]entry
	var cur []entry
	size := 0
	for _, t := range slices.Sorted(maps.Keys(tables)) {
		rows := tables[t]
		for _, k := range slices.Sorted(maps.Keys(rows)) {
			n := len(t) + len(k) + len(rows[k]) + 16
			if size+n > s.opts.MaxObjectBytes && len(cur) > 0 {
				chunks, cur, size = append(chunks, cur), nil, 0
			}
			cur, size = append(cur, entry{T: t, K: k, V: rows[k]}), size+n
		}
	}
	if len(cur) > 0 {
		chunks = append(chunks, cur)
	}
	secrets := s.client.CoreV1().Secrets(s.opts.Namespace)
	for i, c := range chunks {
		data, err := encode(c)
		if err != nil {
			return err
		}
		if _, err := secrets.Create(ctx, s.secret(s.chunkName(seq, i), recordChunk, seq, data), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
	}
	manifest := s.secret(s.snapName(seq), recordSnapshot, seq, nil)
	manifest.Annotations[wellknown.AnnotationRMStateChunks] = wellknown.FormatCount(len(chunks))
	if _, err := secrets.Create(ctx, manifest, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return nil
}

// Close implements state.Durable. It waits for a compaction in flight, so
// that a clean shutdown leaves a short log.
func (s *Store) Close() error {
	s.wg.Wait()
	return nil
}

func (s *Store) secret(name, record string, seq int64, data []byte) *corev1.Secret {
	o := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.opts.Namespace,
			Labels:      map[string]string{wellknown.LabelRMState: s.opts.Name, wellknown.LabelRMStateRecord: record, "app.kubernetes.io/part-of": "weft"},
			Annotations: map[string]string{wellknown.AnnotationRMStateSeq: strconv.FormatInt(seq, 10)}},
		Type: wellknown.SecretTypeRMState,
	}
	if data != nil {
		o.Data = map[string][]byte{dataKey: data}
	}
	return o
}

// Names sort as their sequence numbers do.
func (s *Store) logName(seq int64) string  { return fmt.Sprintf("%s-log-%012d", s.opts.Name, seq) }
func (s *Store) snapName(seq int64) string { return fmt.Sprintf("%s-snap-%012d", s.opts.Name, seq) }
func (s *Store) chunkName(seq int64, i int) string {
	return fmt.Sprintf("%s-snap-%012d-%d", s.opts.Name, seq, i)
}

func seqOf(o *corev1.Secret) (int64, error) {
	seq, err := strconv.ParseInt(o.Annotations[wellknown.AnnotationRMStateSeq], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("kubestore: %s: sequence number: %w", o.Name, err)
	}
	return seq, nil
}

func apply(tables map[string]map[string][]byte, entries []entry) {
	for _, e := range entries {
		rows := tables[e.T]
		if rows == nil {
			rows = map[string][]byte{}
			tables[e.T] = rows
		}
		if e.V == nil || string(e.V) == "null" {
			delete(rows, e.K)
		} else {
			rows[e.K] = e.V
		}
	}
}

func encode(entries []entry) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(entries); err != nil {
		return nil, fmt.Errorf("kubestore: encode: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decode(data []byte) ([]entry, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	var entries []entry
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return entries, nil
}

func nonce() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
