package auxservices

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary plays the services' JVM when WEFT_FAKE_JVM names a file
// to log the requests it gets in: it speaks the host's protocol, refuses
// application_1_0666 with a Java exception and dies on application_1_0999.
func TestMain(m *testing.M) {
	if log := os.Getenv("WEFT_FAKE_JVM"); log != "" {
		fakeJVM(log)
		return
	}
	os.Exit(m.Run())
}

func fakeJVM(log string) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		os.Exit(2)
	}
	fmt.Fprintf(f, "start %s\n", strings.Join(os.Args[1:], " "))
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		line := in.Text()
		fmt.Fprintln(f, line)
		fields := strings.Fields(line)
		switch {
		case fields[0] == "meta":
			fmt.Println("ok spark_shuffle=" + base64.StdEncoding.EncodeToString([]byte{0, 0, 0x1c, 0xa9}))
		case fields[0] == "initApp" && fields[2] == "application_1_0999":
			os.Exit(3)
		case fields[0] == "initApp" && fields[2] == "application_1_0666":
			fmt.Println("err java.lang.IllegalStateException " + base64.StdEncoding.EncodeToString([]byte("no secret for application_1_0666")))
		default:
			fmt.Println("ok")
		}
	}
	fmt.Fprintln(f, "stdin closed")
}

// host runs a Host over the fake JVM and returns it with its request log.
func host(t *testing.T) (*Host, func() []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "requests")
	t.Setenv("WEFT_FAKE_JVM", log)
	h, err := New(Options{
		Services: []Service{{Name: "spark_shuffle", Class: "org.apache.spark.network.yarn.YarnShuffleService", Classpath: "/opt/spark/yarn/*"}},
		Java:     self, HadoopClasspath: HadoopClasspath("/opt/hadoop"), WorkDir: t.TempDir(), RecoveryDir: "/var/lib/weft/nm-recovery/nm-aux-services",
		Restart: 10 * time.Millisecond, Stderr: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if b, _ := os.ReadFile(log); !strings.HasSuffix(string(b), "stdin closed\n") {
			t.Errorf("the JVM was not told to stop: %s", b)
		}
	})
	return h, func() []string {
		b, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestHostStartsTheJVMWithTheServicesAndHadoopsClasspath(t *testing.T) {
	h, requests := host(t)
	if err := h.InitContainer(ctx(t), "container_1_0001_01_000002", "alice"); err != nil {
		t.Fatal(err)
	}
	start := requests()[0]
	for _, want := range []string{
		"-cp /opt/hadoop/share/hadoop/common/*:/opt/hadoop/share/hadoop/common/lib/*:/opt/hadoop/share/hadoop/yarn/*:/opt/hadoop/share/hadoop/yarn/lib/* ",
		"AuxServiceHost.java --service spark_shuffle=org.apache.spark.network.yarn.YarnShuffleService=/opt/spark/yarn/*",
		"--recovery /var/lib/weft/nm-recovery/nm-aux-services",
	} {
		if !strings.Contains(start, want) {
			t.Errorf("JVM started as\n%s\nwithout %s", start, want)
		}
	}
	if got := string(h.MetaData()["spark_shuffle"]); got != "\x00\x00\x1c\xa9" {
		t.Errorf("metadata %q", got)
	}
}

func TestHostRequests(t *testing.T) {
	h, requests := host(t)
	for _, tc := range []struct {
		name, service, app string
		class              string // the error's Java class; empty: none
		sent               bool
	}{
		{name: "an application's service data reaches its service", service: "spark_shuffle", app: "application_1_0001", sent: true},
		{name: "a service's exception comes back with its Java class", service: "spark_shuffle", app: "application_1_0666",
			class: "java.lang.IllegalStateException", sent: true},
		{name: "a service the node lacks is refused with InvalidAuxServiceException, the JVM not asked", service: "flink_shuffle",
			app: "application_1_0002", class: "org.apache.hadoop.yarn.exceptions.InvalidAuxServiceException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.InitApp(ctx(t), tc.service, tc.app, "alice", []byte("s3cret"))
			var re *RemoteError
			switch {
			case tc.class == "" && err != nil:
				t.Fatal(err)
			case tc.class != "" && (!errors.As(err, &re) || re.Class != tc.class):
				t.Fatalf("error %v, want a %s", err, tc.class)
			}
			want := fmt.Sprintf("initApp %s %s alice %s", tc.service, tc.app, base64.StdEncoding.EncodeToString([]byte("s3cret")))
			reqs := requests()
			if sent := reqs[len(reqs)-1] == want; sent != tc.sent {
				t.Errorf("sent %v, want %v: %v", sent, tc.sent, reqs)
			}
		})
	}
}

func TestAJVMThatDiesIsStartedAgainAndToldTheApplicationsItKnew(t *testing.T) {
	h, requests := host(t)
	c := ctx(t)
	for _, app := range []string{"application_1_0001", "application_1_0002"} {
		if err := h.InitApp(c, "spark_shuffle", app, "alice", []byte(app)); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.StopApp(c, "application_1_0002"); err != nil {
		t.Fatal(err)
	}
	// The JVM dies mid-request: the caller gets an error, not a hang.
	if err := h.InitApp(c, "spark_shuffle", "application_1_0999", "alice", nil); err == nil {
		t.Fatal("no error from a JVM that died answering")
	}
	// The next request waits for the new JVM, which first heard the
	// application still running again.
	if err := h.InitContainer(c, "container_1_0001_01_000003", "alice"); err != nil {
		t.Fatal(err)
	}
	var second []string
	starts := 0
	for _, r := range requests() {
		if strings.HasPrefix(r, "start ") {
			starts++
			continue
		}
		if starts == 2 {
			second = append(second, r)
		}
	}
	want := []string{"initApp spark_shuffle application_1_0001 alice " + base64.StdEncoding.EncodeToString([]byte("application_1_0001")), "meta",
		"initContainer container_1_0001_01_000003 alice"}
	if strings.Join(second, "\n") != strings.Join(want, "\n") {
		t.Errorf("the second JVM heard\n%s\nwant\n%s", strings.Join(second, "\n"), strings.Join(want, "\n"))
	}
}

func TestNewRefusesAServiceWithoutAClassOrTwiceNamed(t *testing.T) {
	for _, svcs := range [][]Service{
		{{Name: "spark_shuffle"}},
		{{Name: "a b", Class: "x.Y"}},
		{{Name: "s", Class: "x.Y"}, {Name: "s", Class: "x.Z"}},
	} {
		if _, err := New(Options{Services: svcs}); err == nil {
			t.Errorf("%v accepted", svcs)
		}
	}
}

func TestARequestFailsWhenTheJVMDoesNotComeUp(t *testing.T) {
	h, err := New(Options{
		Services: []Service{{Name: "spark_shuffle", Class: "org.apache.spark.network.yarn.YarnShuffleService"}},
		Java:     filepath.Join(t.TempDir(), "no-java"), WorkDir: t.TempDir(), Restart: 10 * time.Millisecond, Wait: 200 * time.Millisecond,
		Stderr: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(c)
	start := time.Now()
	if err := h.InitApp(ctx(t), "spark_shuffle", "application_1_0001", "alice", nil); err == nil {
		t.Fatal("initialized an application with no JVM")
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("waited %s for a JVM that never came", waited)
	}
}
