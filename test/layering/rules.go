package layering

// rooms are the module's top-level rooms (README's "Where things live").
var rooms = []string{"cmd/...", "rmfacade/...", "translator/...", "bigdataplugin/...", "quota/...", "scheduler/...", "protos/...", "deploy/...", "test/..."}

// kubernetes is every Kubernetes module: the API types, apimachinery,
// client-go, controller-runtime.
var kubernetes = []string{"k8s.io/...", "sigs.k8s.io/..."}

// Rules are Weft's import rules. Imports point down: cmd wires the rooms,
// the rooms share protos/ (the Hadoop wire vocabulary), and none reaches
// another's internals sideways.
var Rules = []Rule{
	{
		Name: "protos is the vocabulary", From: []string{"protos/..."}, Forbid: rooms, Allow: []string{"protos/..."},
		Why: "every room imports the wire vocabulary, so it may import no room, or one of them would import itself through it",
	},
	{
		Name: "protos links no Kubernetes", From: []string{"protos/..."}, Linked: true, Forbid: kubernetes,
		Why: "a Hadoop client's vocabulary, linked by the node plugin and the Hadoop-facing tools: what maps it onto Kubernetes is translator's",
	},
	{
		Name: "protos links no store", From: []string{"protos/..."}, Linked: true,
		Forbid: []string{"go.etcd.io/bbolt/..."},
		Why: "what stores the vocabulary is the RM's and the scheduler's. protos/cowtable, the copy-on-write B-tree tables both " +
			"stores keep their objects in, is below both rooms because it knows no object of either, and it persists nothing; " +
			"the node plugin's rule keeps it (google/btree) out of the node",
	},
	{
		Name: "nothing imports a command", From: []string{"..."}, Except: []string{"cmd/..."}, Forbid: []string{"cmd/..."}, Tests: true,
		Why: "a main only wires; what another package needs of it belongs in a room",
	},
	{
		Name: "nothing imports the test harness", From: []string{"..."}, Except: []string{"test/...", "cmd/weft-demo"}, Forbid: []string{"test/..."}, Tests: true,
		Why: "test/ drives real processes (a local cluster, Maven, Hadoop's JVMs): what the product or its unit tests need of it belongs in a room. " +
			"The one exception is make run's demo, which runs on that local cluster (test/kube) with a MiniDFSCluster (test/hadoop)",
	},
	{
		Name: "the scheduler's core links no Kubernetes", From: []string{"scheduler/..."},
		Except: []string{"scheduler/podbinder/...", "scheduler/tide/...", "scheduler/sim/..."}, Forbid: kubernetes, Linked: true,
		Why: "it plans over plain objects, so it runs and is tested without an API server; podbinder and the tide are its Kubernetes side, " +
			"and scheduler/sim replays the tide's and the node agent's controllers (only weft-sim imports it)",
	},
	{
		Name: "quota's arithmetic links no Kubernetes", From: []string{"quota/..."}, Except: []string{"quota/api/...", "quota/crd/..."},
		Forbid: kubernetes, Linked: true,
		Why: "the scheduler imports it on its hot path; the Queue CRD and its mapping are quota/api and quota/crd",
	},
	{
		Name: "quota imports no room but protos", From: []string{"quota/..."},
		Forbid: rooms, Allow: []string{"protos/...", "quota/..."},
		Why: "the RM and the scheduler share its queues and quantities; the YARN records it builds them from are protos/yarn/records",
	},
	{
		Name: "translator imports no room but protos", From: []string{"translator/..."},
		Forbid: rooms, Allow: []string{"protos/...", "translator/..."},
		Why: "the RM, the node plugin and the tide share its mapping of YARN onto pods; it maps the records of protos/yarn/records",
	},
	{
		Name: "the scheduler reaches no facade", From: []string{"scheduler/..."}, Except: []string{"scheduler/sim/..."},
		Forbid: []string{"rmfacade/...", "bigdataplugin/...", "cmd/..."},
		Why:    "the scheduler is the RM's and the tide's engine, below both: the facade adapts YARN to it, not the other way round",
	},
	{
		Name: "only weft-sim runs the simulator", From: []string{"..."}, Except: []string{"scheduler/sim/...", "cmd/weft-sim", "test/bench/groundtruth"},
		Forbid: []string{"scheduler/sim/..."}, Tests: true,
		Why: "scheduler/sim sits above the scheduler and the node agent's decisions (it replays both on a virtual clock), so the one package of scheduler/ that may import the node plugin's colocation code is one nothing else imports " +
			"but weft-sim and its ground truth (test/bench/groundtruth), which runs the same simulation beside the real run it is checked against",
	},
	{
		Name: "the node plugin links nothing of the RM", From: []string{"bigdataplugin/...", "cmd/weft-nodeplugin"}, Linked: true,
		Forbid: []string{"rmfacade/...", "go.etcd.io/bbolt/...", "github.com/google/btree/..."},
		Why: "it runs on every node: what it shares with the RM (IPC, records, tokens) is in protos/, and the RM's store is no part of it " +
			"(nor the stores' tables, protos/cowtable over google/btree)",
	},
	{
		Name: "the RM imports nothing of the node plugin", From: []string{"rmfacade/..."}, Forbid: []string{"bigdataplugin/..."},
		Why: "the RM and the node plugin are peers over the wire; what both need (container tokens and NMTokens) is in protos/",
	},
	{
		Name: "the RM's store reaches no scheduler", From: []string{"rmfacade/state/..."}, Forbid: []string{"scheduler/..."}, Linked: true,
		Why: "the RM's objects are kept whatever schedules them; what its store needs below it is in protos (protos/cowtable)",
	},
	{
		Name: "the node plugin reaches no scheduler", From: []string{"bigdataplugin/..."}, Forbid: []string{"scheduler/...", "quota/..."},
		Why: "a node runs containers it is handed; queues and placement are the RM's",
	},
}
