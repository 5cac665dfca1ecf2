package main

import (
	"slices"
	"testing"

	"github.com/weft-sh/weft/test/hadoop"
)

func TestSparkArgs(t *testing.T) {
	spark := &hadoop.Spark{Home: "/s", AppJar: "/s/app.jar"}
	local := []string{"--conf", "spark.yarn.jars=local:/s/jars/*"}
	for _, tc := range []struct {
		name     string
		in, want []string
	}{
		{"examples is the application jar", []string{"--master", "yarn", "--class", "sh.weft.spark.SparkPi", "examples", "10"},
			append(slices.Clone(local), "--master", "yarn", "--class", "sh.weft.spark.SparkPi", "/s/app.jar", "10")},
		{"an option's value named examples stays", []string{"--name", "examples", "--class", "C", "examples", "examples"},
			append(slices.Clone(local), "--name", "examples", "--class", "C", "/s/app.jar", "examples")},
		{"the user's spark.yarn.jars wins", []string{"--conf", "spark.yarn.jars=hdfs:///jars/*", "my.jar"},
			[]string{"--conf", "spark.yarn.jars=hdfs:///jars/*", "my.jar"}},
		{"so does spark.yarn.archive", []string{"--conf", "spark.yarn.archive=hdfs:///spark.zip", "my.jar"},
			[]string{"--conf", "spark.yarn.archive=hdfs:///spark.zip", "my.jar"}},
	} {
		if got := sparkArgs(spark, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
