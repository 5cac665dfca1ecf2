// Package bigdataplugin is Weft's node side beside kubelet: the NodeManager's ContainerManagementProtocol, HDFS localization, the MapReduce shuffle service and the node's reclaimed-resource cgroup box.
//
// How it works and why: docs/architecture/bigdataplugin.md.
package bigdataplugin
