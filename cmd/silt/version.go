package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at link time by the Makefile's build:
//
//	-ldflags "-X main.version=… -X main.commit=… -X main.date=…"
//
// A plain go build or go install leaves them empty, and the module's build
// information fills in what it has.
var version, commit, date string

type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	Go      string `json:"go"`
}

func buildVersion() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionOf(version, commit, date, bi)
}

// versionOf fills what the link did not set from the build information
// (bi, nil if there is none).
func versionOf(version, commit, date string, bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: version, Commit: commit, Date: date, Go: runtime.Version()}
	if bi != nil {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version // go install …@vX.Y.Z
		}
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if v.Commit == "" {
					v.Commit = s.Value
				}
			case "vcs.time":
				if v.Date == "" {
					v.Date = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && commit == "" && v.Commit != "" {
			v.Commit += "-dirty"
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	if v.Date == "" {
		v.Date = "unknown"
	}
	return v
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version, commit and build date",
		Long: `Prints silt's version, the commit it was built from and when, and the Go
release that built it. Builds by make carry all three; a plain go build or
go install takes the commit and its time from Go's build information.`,
		Example: `  silt version
  silt version -o json`,
		Args:        args(0, 0),
		Annotations: map[string]string{annotLocal: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			return a.print(v, func(w io.Writer) {
				fmt.Fprintf(w, "silt\t%s\ncommit\t%s\nbuilt\t%s\ngo\t%s\n", v.Version, v.Commit, v.Date, v.Go)
			})
		},
	}
}
