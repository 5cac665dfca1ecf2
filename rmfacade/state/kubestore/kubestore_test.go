package kubestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/translator/wellknown"
)

const ns = "weft-system"

func open(t *testing.T, client *fake.Clientset, opts Options) (*state.Store, *Store) {
	t.Helper()
	opts.Namespace, opts.Name = ns, "test-rm-state"
	s, d, err := Open(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, d
}

func appID(n int32) records.ApplicationID {
	return records.ApplicationID{ClusterTimestamp: 1700000000000, ID: n}
}

func putApp(t *testing.T, s *state.Store, n int32, st records.AppState) error {
	t.Helper()
	return s.Update(func(w *state.WriteTxn) error {
		if err := w.PutApplication(&records.Application{ID: appID(n), State: st, Queue: "default", User: "alice", Type: "MAPREDUCE"}); err != nil {
			return err
		}
		return w.PutAttempt(&records.Attempt{ID: records.AttemptID{App: appID(n), ID: 1}})
	})
}

// states lists the applications a store holds as "id=state".
func states(s *state.Store) string {
	var out []string
	for _, a := range s.Snapshot().Applications(state.ApplicationFilter{}) {
		out = append(out, fmt.Sprintf("%d=%s", a.ID.ID, a.State))
	}
	return strings.Join(out, " ")
}

func objects(t *testing.T, client *fake.Clientset, record string) []string {
	t.Helper()
	list, err := client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: wellknown.LabelRMStateRecord + "=" + record})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range list.Items {
		names = append(names, o.Name)
	}
	return names
}

func TestCommitsSurviveReload(t *testing.T) {
	client := fake.NewClientset()
	s, _ := open(t, client, Options{})
	for i := int32(1); i <= 3; i++ {
		if err := putApp(t, s, i, records.AppRunning); err != nil {
			t.Fatal(err)
		}
	}
	if err := putApp(t, s, 2, records.AppFinished); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(w *state.WriteTxn) error { return w.DeleteApplication(appID(3)) }); err != nil {
		t.Fatal(err)
	}
	s.Close()

	again, _ := open(t, client, Options{})
	if got, want := states(again), "1=RUNNING 2=FINISHED"; got != want {
		t.Fatalf("reloaded %q, want %q", got, want)
	}
	if again.Snapshot().Attempt(records.AttemptID{App: appID(3), ID: 1}) != nil {
		t.Fatal("the deleted application's attempt came back")
	}
	// The reloaded store continues the log where it ended.
	if err := putApp(t, again, 4, records.AppAccepted); err != nil {
		t.Fatal(err)
	}
	if n := len(objects(t, client, recordLog)); n != 6 {
		t.Fatalf("%d log entries, want 6", n)
	}
}

func TestCompactionKeepsRecordsAndDropsTheLog(t *testing.T) {
	client := fake.NewClientset()
	// Small objects: the snapshot needs several chunks.
	s, d := open(t, client, Options{CompactEvery: 5, MaxObjectBytes: 600})
	for i := int32(1); i <= 12; i++ {
		if err := putApp(t, s, i, records.AppRunning); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Update(func(w *state.WriteTxn) error { return w.DeleteApplication(appID(1)) }); err != nil {
		t.Fatal(err)
	}
	d.Close() // waits for the compactions in flight
	snaps := objects(t, client, recordSnapshot)
	if len(snaps) != 1 {
		t.Fatalf("snapshots %v, want one (older ones deleted)", snaps)
	}
	var at int
	fmt.Sscanf(snaps[0][strings.LastIndex(snaps[0], "-")+1:], "%d", &at)
	if at < 4 {
		t.Fatalf("snapshot %s: none after 5 entries", snaps[0])
	}
	if n := len(objects(t, client, recordChunk)); n < 2 {
		t.Fatalf("%d chunks, want several (600-byte objects)", n)
	}
	// 13 commits, entries 0..12: the ones up to the snapshot are gone.
	if logs := objects(t, client, recordLog); len(logs) != 12-at {
		t.Fatalf("log entries %v beside snapshot %d", logs, at)
	}

	again, _ := open(t, client, Options{CompactEvery: 5, MaxObjectBytes: 600})
	want := "2=RUNNING 3=RUNNING 4=RUNNING 5=RUNNING 6=RUNNING 7=RUNNING 8=RUNNING 9=RUNNING 10=RUNNING 11=RUNNING 12=RUNNING"
	if got := states(again); got != want {
		t.Fatalf("reloaded %q, want %q", got, want)
	}
}

func TestSecondWriterIsFenced(t *testing.T) {
	client := fake.NewClientset()
	old, oldD := open(t, client, Options{})
	if err := putApp(t, old, 1, records.AppRunning); err != nil {
		t.Fatal(err)
	}
	// A new leader loads; the deposed one, not yet aware, writes first.
	leader, leaderD := open(t, client, Options{})
	if err := putApp(t, old, 2, records.AppRunning); err != nil {
		t.Fatal(err)
	}
	err := putApp(t, leader, 3, records.AppRunning)
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("the writer behind the log wrote: %v", err)
	}
	select {
	case <-leaderD.Fenced():
	default:
		t.Fatal("Fenced not closed")
	}
	// Once a writer learns it is behind, it stays stopped; the one ahead
	// goes on until the next leader writes.
	if err := putApp(t, leader, 4, records.AppRunning); !errors.Is(err, ErrFenced) {
		t.Fatalf("fenced store wrote: %v", err)
	}
	if got := states(leader); got != "1=RUNNING" {
		t.Fatalf("a refused write changed the fenced store's view: %q", got)
	}
	next, _ := open(t, client, Options{})
	if err := putApp(t, next, 5, records.AppRunning); err != nil {
		t.Fatal(err)
	}
	if err := putApp(t, old, 6, records.AppRunning); !errors.Is(err, ErrFenced) {
		t.Fatalf("deposed writer wrote after the new one: %v", err)
	}
	select {
	case <-oldD.Fenced():
	default:
		t.Fatal("Fenced not closed for the deposed writer")
	}
	final, _ := open(t, client, Options{})
	if got, want := states(final), "1=RUNNING 2=RUNNING 5=RUNNING"; got != want {
		t.Fatalf("stored %q, want %q", got, want)
	}
}

func TestMayWriteFences(t *testing.T) {
	client := fake.NewClientset()
	leading := true
	s, d := open(t, client, Options{MayWrite: func() bool { return leading }})
	if err := putApp(t, s, 1, records.AppRunning); err != nil {
		t.Fatal(err)
	}
	leading = false
	if err := putApp(t, s, 2, records.AppRunning); !errors.Is(err, ErrFenced) {
		t.Fatalf("wrote without leadership: %v", err)
	}
	select {
	case <-d.Fenced():
	default:
		t.Fatal("Fenced not closed")
	}
}

// An API server that stored the entry but whose answer was lost: the
// retry finds the entry its own and the commit succeeds.
func TestLostAnswerIsRetried(t *testing.T) {
	client := fake.NewClientset()
	s, d := open(t, client, Options{})
	failed := 0
	client.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if failed > 0 {
			return false, nil, nil
		}
		failed++
		obj := a.(k8stesting.CreateAction).GetObject()
		if err := client.Tracker().Create(corev1.SchemeGroupVersion.WithResource("secrets"), obj, ns); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewServerTimeout(schema.GroupResource{Resource: "secrets"}, "create", 1)
	})
	if err := putApp(t, s, 1, records.AppRunning); err != nil {
		t.Fatal(err)
	}
	if failed != 1 {
		t.Fatal("the create never failed")
	}
	if err := putApp(t, s, 2, records.AppRunning); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Fenced():
		t.Fatal("fenced by its own write")
	default:
	}
	again, _ := open(t, client, Options{})
	if got := states(again); got != "1=RUNNING 2=RUNNING" {
		t.Fatalf("stored %q", got)
	}
}

func TestOversizedTransactionIsRefusedAndTheStoreGoesOn(t *testing.T) {
	client := fake.NewClientset()
	s, d := open(t, client, Options{MaxObjectBytes: 400})
	big := func(w *state.WriteTxn) error {
		for i := int32(1); i <= 50; i++ {
			if err := w.PutApplication(&records.Application{ID: appID(i), Name: strings.Repeat(fmt.Sprint(i), 40), Queue: "default", User: "alice", Type: "YARN", State: records.AppRunning}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := s.Update(big); err == nil || !strings.Contains(err.Error(), "exceeds the store's limit") {
		t.Fatalf("oversized transaction: %v", err)
	}
	if got := states(s); got != "" {
		t.Fatalf("refused transaction visible: %q", got)
	}
	if err := putApp(t, s, 1, records.AppRunning); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Fenced():
		t.Fatal("an oversized transaction fenced the store")
	default:
	}
}

func TestMissingLogEntryFailsTheLoad(t *testing.T) {
	client := fake.NewClientset()
	s, _ := open(t, client, Options{})
	for i := int32(1); i <= 3; i++ {
		if err := putApp(t, s, i, records.AppRunning); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.CoreV1().Secrets(ns).Delete(context.Background(), fmt.Sprintf("test-rm-state-log-%012d", 1), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, err := Open(client, Options{Namespace: ns, Name: "test-rm-state"})
	if err == nil || !strings.Contains(err.Error(), "log entry 1 missing") {
		t.Fatalf("load over a damaged log: %v", err)
	}
}
