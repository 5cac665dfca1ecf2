package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/url"
	"strconv"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/rmfacade/records"
)

// submissionContext is the body of POST /ws/v1/cluster/apps, as YARN's
// ApplicationSubmissionContextInfo reads it from JSON or XML.
type submissionContext struct {
	XMLName         xml.Name               `json:"-" xml:"application-submission-context"`
	ApplicationID   string                 `json:"application-id" xml:"application-id"`
	ApplicationName string                 `json:"application-name" xml:"application-name"`
	Queue           string                 `json:"queue" xml:"queue"`
	Priority        int32                  `json:"priority" xml:"priority"`
	AMContainerSpec containerLaunchContext `json:"am-container-spec" xml:"am-container-spec"`
	UnmanagedAM     bool                   `json:"unmanaged-AM" xml:"unmanaged-AM"`
	MaxAppAttempts  int32                  `json:"max-app-attempts" xml:"max-app-attempts"`
	Resource        resourceInfo           `json:"resource" xml:"resource"`
	ApplicationType string                 `json:"application-type" xml:"application-type"`
	KeepContainers  bool                   `json:"keep-containers-across-application-attempts" xml:"keep-containers-across-application-attempts"`
	ApplicationTags struct {
		Tag oneOrMany[string] `json:"tag" xml:"tag"`
	} `json:"application-tags" xml:"application-tags"`
}

type containerLaunchContext struct {
	LocalResources struct {
		Entry oneOrMany[localResourceEntry] `json:"entry" xml:"entry"`
	} `json:"local-resources" xml:"local-resources"`
	Environment struct {
		Entry oneOrMany[keyValue] `json:"entry" xml:"entry"`
	} `json:"environment" xml:"environment"`
	Commands struct {
		Command oneOrMany[string] `json:"command" xml:"command"`
	} `json:"commands" xml:"commands"`
	ServiceData struct {
		Entry oneOrMany[keyValue] `json:"entry" xml:"entry"`
	} `json:"service-data" xml:"service-data"`
	ApplicationACLs struct {
		Entry oneOrMany[keyValue] `json:"entry" xml:"entry"`
	} `json:"application-acls" xml:"application-acls"`
}

type keyValue struct {
	Key   string `json:"key" xml:"key"`
	Value string `json:"value" xml:"value"`
}

type localResourceEntry struct {
	Key   string `json:"key" xml:"key"`
	Value struct {
		Resource   string `json:"resource" xml:"resource"`
		Type       string `json:"type" xml:"type"`
		Visibility string `json:"visibility" xml:"visibility"`
		Size       int64  `json:"size" xml:"size"`
		Timestamp  int64  `json:"timestamp" xml:"timestamp"`
		Pattern    string `json:"pattern,omitempty" xml:"pattern,omitempty"`
	} `json:"value" xml:"value"`
}

// oneOrMany reads a JSON value that Jersey writes as a bare element when a
// list has one entry and as an array otherwise.
type oneOrMany[T any] []T

func (o *oneOrMany[T]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var many []T
		err := json.Unmarshal(b, &many)
		*o = many
		return err
	}
	if bytes.Equal(b, []byte("null")) {
		*o = nil
		return nil
	}
	var one T
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*o = []T{one}
	return nil
}

// toProto converts the REST form to the ApplicationSubmissionContext the
// IPC clients send, so both reach the AM launcher in one form.
func (s *submissionContext) toProto(id records.ApplicationID) (*yarnpb.ApplicationSubmissionContextProto, error) {
	clc := &yarnpb.ContainerLaunchContextProto{Command: s.AMContainerSpec.Commands.Command}
	for _, e := range s.AMContainerSpec.LocalResources.Entry {
		u, err := url.Parse(e.Value.Resource)
		if err != nil || u.Scheme == "" {
			return nil, fmt.Errorf("local resource %q: invalid URL %q", e.Key, e.Value.Resource)
		}
		typ, ok := yarnpb.LocalResourceTypeProto_value[orDefault(e.Value.Type, "FILE")]
		if !ok {
			return nil, fmt.Errorf("local resource %q: unknown type %q", e.Key, e.Value.Type)
		}
		vis, ok := yarnpb.LocalResourceVisibilityProto_value[orDefault(e.Value.Visibility, "APPLICATION")]
		if !ok {
			return nil, fmt.Errorf("local resource %q: unknown visibility %q", e.Key, e.Value.Visibility)
		}
		lr := &yarnpb.LocalResourceProto{
			Resource: &yarnpb.URLProto{Scheme: proto.String(u.Scheme), Host: proto.String(u.Hostname()), File: proto.String(u.Path)},
			Size:     proto.Int64(e.Value.Size), Timestamp: proto.Int64(e.Value.Timestamp),
			Type: yarnpb.LocalResourceTypeProto(typ).Enum(), Visibility: yarnpb.LocalResourceVisibilityProto(vis).Enum(),
		}
		if p := u.Port(); p != "" {
			n, _ := strconv.Atoi(p)
			lr.Resource.Port = proto.Int32(int32(n))
		}
		if u.User != nil {
			lr.Resource.UserInfo = proto.String(u.User.String())
		}
		if e.Value.Pattern != "" {
			lr.Pattern = proto.String(e.Value.Pattern)
		}
		clc.LocalResources = append(clc.LocalResources, &yarnpb.StringLocalResourceMapProto{Key: proto.String(e.Key), Value: lr})
	}
	for _, e := range s.AMContainerSpec.Environment.Entry {
		clc.Environment = append(clc.Environment, &yarnpb.StringStringMapProto{Key: proto.String(e.Key), Value: proto.String(e.Value)})
	}
	for _, e := range s.AMContainerSpec.ServiceData.Entry {
		v, err := base64.StdEncoding.DecodeString(e.Value)
		if err != nil {
			return nil, fmt.Errorf("service data %q is not base64: %v", e.Key, err)
		}
		clc.ServiceData = append(clc.ServiceData, &yarnpb.StringBytesMapProto{Key: proto.String(e.Key), Value: v})
	}
	for _, e := range s.AMContainerSpec.ApplicationACLs.Entry {
		t, ok := yarnpb.ApplicationAccessTypeProto_value["APPACCESS_"+e.Key]
		if !ok {
			return nil, fmt.Errorf("unknown application ACL %q", e.Key)
		}
		clc.Application_ACLs = append(clc.Application_ACLs, &yarnpb.ApplicationACLMapProto{AccessType: yarnpb.ApplicationAccessTypeProto(t).Enum(), Acl: proto.String(e.Value)})
	}
	sc := &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId:   &yarnpb.ApplicationIdProto{Id: proto.Int32(id.ID), ClusterTimestamp: proto.Int64(id.ClusterTimestamp)},
		ApplicationName: proto.String(orDefault(s.ApplicationName, "N/A")), Queue: proto.String(orDefault(s.Queue, "default")),
		Priority: &yarnpb.PriorityProto{Priority: proto.Int32(s.Priority)}, AmContainerSpec: clc, UnmanagedAm: proto.Bool(s.UnmanagedAM),
		MaxAppAttempts: proto.Int32(s.MaxAppAttempts), ApplicationType: proto.String(orDefault(s.ApplicationType, "YARN")),
		Resource:                                &yarnpb.ResourceProto{Memory: proto.Int64(s.Resource.Memory), VirtualCores: proto.Int32(s.Resource.VCores)},
		KeepContainersAcrossApplicationAttempts: proto.Bool(s.KeepContainers), ApplicationTags: s.ApplicationTags.Tag,
	}
	return sc, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
