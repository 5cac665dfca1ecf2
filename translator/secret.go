package translator

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
)

// LaunchSecret is the Secret a container pod mounts at CredentialsDir: its
// token storage (HADOOP_TOKEN_FILE_LOCATION) and, for the localizer, its
// LocalResources. It reports whether there are resources to localize.
func LaunchSecret(name, namespace string, labels map[string]string, tokenFile []byte, clc *yarnpb.ContainerLaunchContextProto) (*corev1.Secret, bool, error) {
	data := map[string][]byte{TokenFileKey: tokenFile}
	local := len(clc.GetLocalResources()) > 0
	if local {
		b, err := proto.Marshal(&yarnpb.ContainerLaunchContextProto{LocalResources: clc.GetLocalResources()})
		if err != nil {
			return nil, false, fmt.Errorf("local resources: %w", err)
		}
		data[LocalResourcesKey] = b
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}, Data: data}, local, nil
}

// SecretName names a container's launch Secret.
func SecretName(container string) string { return PodName(container) + "-launch" }
