package layering

// rooms are the module's top-level rooms (README's Layout).
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
		Name: "nothing imports a command", From: []string{"..."}, Except: []string{"cmd/..."}, Forbid: []string{"cmd/..."}, Tests: true,
		Why: "a main only wires; what another package needs of it belongs in a room",
	},
	{
		Name: "nothing imports the test harness", From: []string{"..."}, Except: []string{"test/...", "cmd/weft-demo"}, Forbid: []string{"test/..."}, Tests: true,
		Why: "test/ drives real processes (a local cluster, Maven, Hadoop's JVMs): what the product or its unit tests need of it belongs in a room. " +
			"The one exception is make run's demo, which runs on that local cluster (test/kube) with a MiniDFSCluster (test/hadoop)",
	},
	{
		Name: "the scheduler reaches no facade", From: []string{"scheduler/..."}, Except: []string{"scheduler/sim/..."},
		Forbid: []string{"rmfacade/...", "bigdataplugin/...", "cmd/..."},
		Why:    "the scheduler is the RM's and the tide's engine, below both: the facade adapts YARN to it, not the other way round",
	},
	{
		Name: "only weft-sim runs the simulator", From: []string{"..."}, Except: []string{"scheduler/sim/...", "cmd/weft-sim"},
		Forbid: []string{"scheduler/sim/..."}, Tests: true,
		Why: "scheduler/sim sits above the scheduler and the node agent's decisions (it replays both on a virtual clock), so the one package of scheduler/ that may import the node plugin's colocation code is one nothing else imports",
	},
	{
		Name: "the node plugin reaches no scheduler", From: []string{"bigdataplugin/..."}, Forbid: []string{"scheduler/...", "quota/..."},
		Why: "a node runs containers it is handed; queues and placement are the RM's",
	},
}
