package dao

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"reflect"
	"strings"
)

// ApplicationSubmissionContextInfo is the body of POST /ws/v1/cluster/apps,
// JSON (bare, no root) or XML (<application-submission-context>). Read
// starts from the Java defaults (see NewApplicationSubmissionContextInfo),
// so an absent field keeps the RM's default.
type ApplicationSubmissionContextInfo struct {
	XMLName         xml.Name                   `json:"-" xml:"application-submission-context"`
	ApplicationID   string                     `json:"application-id" xml:"application-id"`
	ApplicationName string                     `json:"application-name" xml:"application-name"`
	Queue           string                     `json:"queue" xml:"queue"`
	Priority        int32                      `json:"priority" xml:"priority"` // -1 (Priority.UNDEFINED) when absent
	AMContainerSpec ContainerLaunchContextInfo `json:"am-container-spec" xml:"am-container-spec"`
	UnmanagedAM     bool                       `json:"unmanaged-AM" xml:"unmanaged-AM"`
	// true when absent.
	CancelTokensWhenComplete bool         `json:"cancel-tokens-when-complete" xml:"cancel-tokens-when-complete"`
	MaxAppAttempts           int32        `json:"max-app-attempts" xml:"max-app-attempts"` // 0: the RM's default
	Resource                 ResourceInfo `json:"resource" xml:"resource"`                 // the AM's; memory and vCores are read
	ApplicationType          string       `json:"application-type" xml:"application-type"`
	// keep-containers-across-application-attempts
	KeepContainers                 bool                       `json:"keep-containers-across-application-attempts" xml:"keep-containers-across-application-attempts"`
	ApplicationTags                ApplicationTags            `json:"application-tags" xml:"application-tags"`
	AppNodeLabelExpression         string                     `json:"app-node-label-expression" xml:"app-node-label-expression"`
	AMContainerNodeLabelExpression string                     `json:"am-container-node-label-expression" xml:"am-container-node-label-expression"`
	LogAggregationContext          *LogAggregationContextInfo `json:"log-aggregation-context,omitempty" xml:"log-aggregation-context,omitempty"`
	// -1 when absent.
	AttemptFailuresValidityInterval int64  `json:"attempt-failures-validity-interval" xml:"attempt-failures-validity-interval"`
	ReservationID                   string `json:"reservation-id" xml:"reservation-id"`
	// am-black-listing-requests is in the RM's documentation and examples,
	// but Hadoop 3.4.1 has no such field and ignores it.
	AMBlackListingRequests *AMBlackListingRequestInfo `json:"am-black-listing-requests,omitempty" xml:"am-black-listing-requests,omitempty"`
}

func (ApplicationSubmissionContextInfo) javaClass() string {
	return daoPackage + "ApplicationSubmissionContextInfo"
}

// NewApplicationSubmissionContextInfo returns a submission with the Java
// class's defaults.
func NewApplicationSubmissionContextInfo() *ApplicationSubmissionContextInfo {
	return &ApplicationSubmissionContextInfo{
		Priority:                        -1,
		CancelTokensWhenComplete:        true,
		AttemptFailuresValidityInterval: -1,
	}
}

func (s *ApplicationSubmissionContextInfo) assignFrom(n *node, tag string) {
	type plain ApplicationSubmissionContextInfo
	*s = *NewApplicationSubmissionContextInfo()
	assign(reflect.ValueOf((*plain)(s)).Elem(), n, tag)
}

// ApplicationTags is {"tag":[...]}, <application-tags><tag/>...; a single
// tag may be sent bare ({"tag":"x"}).
type ApplicationTags struct {
	Tag []string `json:"tag,omitempty" xml:"tag,omitempty"`
}

// ContainerLaunchContextInfo is the AM's launch context (am-container-spec).
// Its maps are JAXB maps: {"entry":[{"key":...,"value":...}]}.
type ContainerLaunchContextInfo struct {
	LocalResources LocalResources `json:"local-resources" xml:"local-resources"`
	Environment    StringMap      `json:"environment" xml:"environment"`
	Commands       Commands       `json:"commands" xml:"commands"`
	// Auxiliary service data by service name, each value base64 (see
	// DecodeBase64).
	ServiceData StringMap       `json:"service-data" xml:"service-data"`
	Credentials CredentialsInfo `json:"credentials" xml:"credentials"`
	// Keys VIEW_APP and MODIFY_APP; values ACL strings ("user1,user2 group").
	ApplicationACLs StringMap `json:"application-acls" xml:"application-acls"`
}

// Commands is {"command":[...]}, <commands><command/>...; one command may
// be sent bare ({"command":"..."}), as the documentation's example does.
type Commands struct {
	Command []string `json:"command,omitempty" xml:"command,omitempty"`
}

// CredentialsInfo is the AM's credentials: tokens by alias, each a token
// in Hadoop's URL-safe string form (Token.encodeToUrlString), and secrets
// by alias, each base64 (see DecodeBase64).
type CredentialsInfo struct {
	Tokens  StringMap `json:"tokens" xml:"tokens"`
	Secrets StringMap `json:"secrets" xml:"secrets"`
}

// LocalResourceEntry is one local resource, by the name it is linked as in
// the container's working directory.
type LocalResourceEntry struct {
	Key   string            `json:"key" xml:"key"`
	Value LocalResourceInfo `json:"value" xml:"value"`
}

// LocalResources is the JAXB map of local resources.
type LocalResources []LocalResourceEntry

// LocalResourceInfo is a resource to localize.
type LocalResourceInfo struct {
	Resource   string `json:"resource" xml:"resource"`     // a URI: hdfs://nn:8020/path
	Type       string `json:"type" xml:"type"`             // ARCHIVE, FILE, PATTERN
	Visibility string `json:"visibility" xml:"visibility"` // PUBLIC, PRIVATE, APPLICATION
	Size       int64  `json:"size" xml:"size"`
	Timestamp  int64  `json:"timestamp" xml:"timestamp"`
	Pattern    string `json:"pattern,omitempty" xml:"pattern,omitempty"` // for PATTERN
}

// LogAggregationContextInfo is the application's log aggregation settings.
type LogAggregationContextInfo struct {
	LogIncludePattern              string `json:"log-include-pattern" xml:"log-include-pattern"`
	LogExcludePattern              string `json:"log-exclude-pattern" xml:"log-exclude-pattern"`
	RolledLogIncludePattern        string `json:"rolled-log-include-pattern" xml:"rolled-log-include-pattern"`
	RolledLogExcludePattern        string `json:"rolled-log-exclude-pattern" xml:"rolled-log-exclude-pattern"`
	LogAggregationPolicyClassName  string `json:"log-aggregation-policy-class-name" xml:"log-aggregation-policy-class-name"`
	LogAggregationPolicyParameters string `json:"log-aggregation-policy-parameters" xml:"log-aggregation-policy-parameters"`
}

// AMBlackListingRequestInfo is the documented am-black-listing-requests.
type AMBlackListingRequestInfo struct {
	AMBlackListingEnabled   bool    `json:"am-black-listing-enabled" xml:"am-black-listing-enabled"`
	DisableFailureThreshold Float32 `json:"disable-failure-threshold" xml:"disable-failure-threshold"`
}

func (m *LocalResources) assignFrom(n *node, tag string) { assignEntries(m, n, tag) }

// MarshalJSON writes the map as Jersey writes a JAXB map.
func (m LocalResources) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		enc, err := marshalJSONNoEscape(e)
		if err != nil {
			return nil, err
		}
		b.WriteString(`"entry":`)
		b.Write(enc)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the map in any of the forms Jersey accepts.
func (m *LocalResources) UnmarshalJSON(b []byte) error {
	n, err := parseJSONTree(b)
	if err != nil {
		return err
	}
	m.assignFrom(n, "json")
	return nil
}

func (m LocalResources) writeXML(x *xmlWriter, name string) {
	x.mapStart(name, len(m) == 0)
	for _, e := range m {
		_ = x.element("entry", reflect.ValueOf(e), true) // plain strings and numbers: cannot fail
	}
	x.mapEnd(name, len(m) == 0)
}

// DecodeBase64 decodes a base64 value of a submission (service-data,
// secrets) as the RM does with commons-codec's Base64.decodeBase64: the
// standard and URL-safe alphabets both, padding optional, other characters
// (such as line breaks) skipped, and decoding ended by the first '='.
func DecodeBase64(s string) []byte {
	var clean strings.Builder
scan:
	for _, c := range []byte(s) {
		switch {
		case c == '=':
			break scan
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/':
			clean.WriteByte(c)
		case c == '-':
			clean.WriteByte('+')
		case c == '_':
			clean.WriteByte('/')
		}
	}
	t := clean.String()
	if len(t)%4 == 1 { // a lone trailing character carries no whole byte
		t = t[:len(t)-1]
	}
	out, err := base64.RawStdEncoding.DecodeString(t)
	if err != nil {
		return nil
	}
	return out
}
