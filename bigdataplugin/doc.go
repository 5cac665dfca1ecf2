// Package bigdataplugin is Weft's node side beside kubelet: the NodeManager's ContainerManagementProtocol, HDFS localization, the MapReduce shuffle service and the node's reclaimed-resource cgroup box.
//
// It is built out by its own issues; see README.md for what works today.
package bigdataplugin
