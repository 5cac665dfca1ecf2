package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/weft-sh/weft/deploy/images"
	"github.com/weft-sh/weft/scheduler/podbinder"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator/wellknown"
)

// schedulerPod is a pod any user could write for Weft's scheduler: no
// YARN in it, its queue and tier in labels.
func schedulerPod(name, queue string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{wellknown.LabelQueue: queue, wellknown.LabelTier: "low", "e2e": "weft-scheduler"}},
		Spec: corev1.PodSpec{
			SchedulerName: podbinder.DefaultSchedulerName,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "sleep", Image: images.BusyboxRef, Command: []string{"/bin/sleep", "600"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")}}}},
		},
	}
}

// expectWeftSchedulesPods: pods naming weft-scheduler are bound by
// weft-rm (kube-scheduler leaves them alone) and run; one naming a queue
// that does not exist stays unbound with a FailedScheduling event that
// says so.
func expectWeftSchedulesPods(ctx context.Context, cluster *kube.Cluster) {
	GinkgoHelper()
	pods := cluster.Client.CoreV1().Pods("default")
	DeferCleanup(func(ctx SpecContext) {
		_ = pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "e2e=weft-scheduler"})
	})
	for i := range 3 {
		_, err := pods.Create(ctx, schedulerPod(fmt.Sprintf("weft-sched-%d", i), "default"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	_, err := pods.Create(ctx, schedulerPod("weft-sched-nowhere", "root.nowhere"), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())

	Eventually(func(g Gomega) {
		for i := range 3 {
			p, err := pods.Get(ctx, fmt.Sprintf("weft-sched-%d", i), metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), p.Name+" is not bound")
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), p.Name)
		}
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

	Eventually(func(g Gomega) {
		evs, err := cluster.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "weft-sched-nowhere").String()})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", "FailedScheduling"),
			HaveField("Message", ContainSubstring(`queue "root.nowhere"`)),
			HaveField("Source.Component", podbinder.DefaultSchedulerName))))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	p, err := pods.Get(ctx, "weft-sched-nowhere", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(p.Spec.NodeName).To(BeEmpty())
}
