// Package dao holds the request and response bodies of the ResourceManager
// REST API (/ws/v1/cluster/...) and the helpers that read and write them the
// way Hadoop's RMWebServices does, so that clients cannot tell Weft from a
// real ResourceManager.
//
// The shapes follow the JAXB classes of
// org.apache.hadoop.yarn.server.resourcemanager.webapp.dao as Hadoop 3.4.1
// renders them through Jersey 1 (JSON "natural" notation, JAXB XML), checked
// against a running 3.4.1 ResourceManager (see testdata/rm-3.4.1). Field
// order in the Go structs is the order the RM writes.
//
// Rendering rules the RM follows, and these types reproduce:
//
//   - Java null is never written: a nil pointer, a nil or empty list and an
//     `omitempty` string the RM leaves null are simply absent. Where the RM
//     writes "" for some objects and null for others, the field is a *string.
//   - Lists are JSON arrays even with one element; an empty list is omitted,
//     so an empty collection is an empty object: {"apps":{}}, {"nodes":{}},
//     "users":{} — and <apps/> in XML. (Hadoop 2 wrote {"apps":null}.)
//   - Java floats are written as Java's Float.toString does ("0.0",
//     "13.890396", "1.0E7"); see Float32 and Float64.
//   - java.util.Map fields are written as entries, which in JSON repeats the
//     "entry" key: {"entry":{"key":"memory-mb","value":"7885"},"entry":{...}},
//     with the value as a string; see LongMap and StringMap.
//   - Some roots are wrapped in JSON and some are not, as Hadoop's
//     JAXBContextResolver configures them: {"clusterInfo":{...}},
//     {"apps":{...}}, {"app":{...}}, {"appAttempts":{...}}, {"nodes":{...}},
//     {"node":{...}}, {"clusterMetrics":{...}}, {"scheduler":{...}},
//     {"RemoteException":{...}}; but NewApplication, AppState, AppQueue and
//     AppPriority are written bare: {"application-id":...}, {"state":...}.
//     In XML every root is an element: <apps>, <NewApplication>, <appstate>,
//     <appqueue>, <applicationpriority>, <RemoteException>.
//   - The scheduler's polymorphic types carry their JAXB type name: "type" in
//     JSON, xsi:type in XML (<schedulerInfo xmlns:xsi=...
//     xsi:type="capacityScheduler">, <queue xsi:type="capacitySchedulerLeafQueueInfo">).
//
// Write, Read and Error do the content negotiation and the encoding; use
// them rather than encoding/json and encoding/xml, whose output differs from
// the RM's in the ways above.
package dao
