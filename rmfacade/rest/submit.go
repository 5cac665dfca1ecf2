package rest

import (
	"fmt"
	"net/url"
	"strconv"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/rmfacade/rest/dao"
)

// submissionProto converts a REST submission to the
// ApplicationSubmissionContext IPC clients send, so that both reach the AM
// launch in one form.
func submissionProto(s *dao.ApplicationSubmissionContextInfo, id records.ApplicationID) (*yarnpb.ApplicationSubmissionContextProto, error) {
	spec := s.AMContainerSpec
	clc := &yarnpb.ContainerLaunchContextProto{Command: spec.Commands.Command}
	for _, e := range spec.LocalResources {
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
	for _, e := range spec.Environment {
		clc.Environment = append(clc.Environment, &yarnpb.StringStringMapProto{Key: proto.String(e.Key), Value: proto.String(e.Value)})
	}
	for _, e := range spec.ServiceData {
		v := dao.DecodeBase64(e.Value)
		if v == nil && e.Value != "" {
			return nil, fmt.Errorf("service data %q is not base64", e.Key)
		}
		clc.ServiceData = append(clc.ServiceData, &yarnpb.StringBytesMapProto{Key: proto.String(e.Key), Value: v})
	}
	for _, e := range spec.ApplicationACLs {
		t, ok := yarnpb.ApplicationAccessTypeProto_value["APPACCESS_"+e.Key]
		if !ok {
			return nil, fmt.Errorf("unknown application ACL %q", e.Key)
		}
		clc.Application_ACLs = append(clc.Application_ACLs, &yarnpb.ApplicationACLMapProto{AccessType: yarnpb.ApplicationAccessTypeProto(t).Enum(), Acl: proto.String(e.Value)})
	}
	return &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId:   wire.AppID(id),
		ApplicationName: proto.String(orDefault(s.ApplicationName, "N/A")), Queue: proto.String(orDefault(s.Queue, "default")),
		Priority: &yarnpb.PriorityProto{Priority: proto.Int32(max(s.Priority, 0))}, AmContainerSpec: clc, UnmanagedAm: proto.Bool(s.UnmanagedAM),
		MaxAppAttempts: proto.Int32(s.MaxAppAttempts), ApplicationType: proto.String(orDefault(s.ApplicationType, "YARN")),
		Resource:                                &yarnpb.ResourceProto{Memory: proto.Int64(s.Resource.Memory), VirtualCores: proto.Int32(s.Resource.VCores)},
		KeepContainersAcrossApplicationAttempts: proto.Bool(s.KeepContainers), ApplicationTags: s.ApplicationTags.Tag,
		CancelTokensWhenComplete: proto.Bool(s.CancelTokensWhenComplete),
	}, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
