package e2e

import (
	"bytes"
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/weft-sh/weft/test/hadoop"
)

// sparkSubmit runs the pinned Spark's spark-submit against Weft, with the
// settings a small cluster's spark-defaults.conf would carry: Spark's jars
// already on every node (spark.yarn.jars=local:...), small executors.
func (y *yarnOnKube) sparkSubmit(ctx context.Context, spark *hadoop.Spark, mode, name string, args ...string) (string, error) {
	return y.sparkSubmitClass(ctx, spark, mode, name, "sh.weft.spark.SparkPi", []string{"spark.executor.instances=2"}, args...)
}

// sparkSubmitClass is sparkSubmit of the harness's application class with
// more settings (key=value).
func (y *yarnOnKube) sparkSubmitClass(ctx context.Context, spark *hadoop.Spark, mode, name, class string, conf []string, args ...string) (string, error) {
	argv := []string{"--master", "yarn", "--deploy-mode", mode, "--name", name,
		"--conf", "spark.yarn.jars=local:" + spark.Home + "/jars/*",
		"--conf", "spark.driver.memory=512m", "--conf", "spark.yarn.am.memory=512m",
		"--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1",
		"--conf", "spark.yarn.maxAppAttempts=1", "--conf", "spark.ui.enabled=false"}
	for _, c := range conf {
		argv = append(argv, "--conf", c)
	}
	argv = append(argv, "--class", class, spark.AppJar)
	cmd := spark.Submit(ctx, y.conf, "alice", append(argv, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// sparkRun is a spark-submit that ran: what it printed, how it ended.
type sparkRun struct {
	out string
	err error
}

// sparkInBackground runs sparkSubmitClass while the spec goes on; the
// channel gets its run.
func (y *yarnOnKube) sparkInBackground(ctx context.Context, spark *hadoop.Spark, mode, name, class string, conf []string, args ...string) <-chan sparkRun {
	done := make(chan sparkRun, 1)
	go func() {
		defer GinkgoRecover()
		out, err := y.sparkSubmitClass(ctx, spark, mode, name, class, conf, args...)
		done <- sparkRun{out, err}
	}()
	return done
}

// sparkSpecs are Spark's specs, run in the ordered YARN applications
// container (y is set by its BeforeAll).
func sparkSpecs(yarn func() *yarnOnKube) {
	It("runs spark-submit --master yarn --deploy-mode cluster SparkPi to SUCCEEDED", func(ctx SpecContext) {
		y := yarn()
		spark, err := hadoop.SparkDist(ctx)
		Expect(err).NotTo(HaveOccurred())
		out, err := y.sparkSubmit(ctx, spark, "cluster", "spark-pi-cluster", "4")
		if err != nil {
			out += y.amSyslog("spark-pi-cluster")
		}
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("final status: SUCCEEDED"))
		app := y.appByName("spark-pi-cluster")
		status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", app)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
		Expect(status).To(MatchRegexp(`Application-Type\s*:\s*SPARK`))
		// The driver ran in the AM's pod; its stdout is in the AM
		// container's logs, served by the node as a NodeManager serves it.
		stdout := y.amLog(app, "stdout")
		Expect(stdout).To(MatchRegexp(`Pi is roughly 3\.1\d*`))
	}, SpecTimeout(8*time.Minute))

	It("runs spark-submit --deploy-mode client SparkPi, executors in pods, and prints Pi is roughly", func(ctx SpecContext) {
		y := yarn()
		spark, err := hadoop.SparkDist(ctx)
		Expect(err).NotTo(HaveOccurred())
		out, err := y.sparkSubmit(ctx, spark, "client", "spark-pi-client", "4")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`Pi is roughly 3\.1\d*`))
		// In client mode the driver names the application itself
		// (SparkConf.setAppName wins over --name, as with Spark's example).
		status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", y.appByName("Spark Pi"))
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
	}, SpecTimeout(8*time.Minute))
}
