// Command silt is the one binary: `silt serve` runs the server, every other
// verb is a client of its native API (see `silt help`).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

const usage = `silt — a stream store with S3, NFS and WebHDFS heads

Usage:
  silt serve [flags]                          run the server (silt serve --help)
  silt tenant create|list|get|delete ...      manage tenants
  silt stream create|list|describe|delete ... manage streams
  silt append TENANT/STREAM [flags]           append events from stdin or --file
  silt read TENANT/STREAM [flags]             read events from any position
  silt tail TENANT/STREAM [flags]             follow new events
  silt principal create|list|delete ...       manage principals
  silt token create|list|revoke ...           manage a principal's API tokens
  silt s3-key create|list|revoke ...          manage a principal's S3 access keys
  silt delegation-token list|cancel ...       list or cancel WebHDFS delegation tokens
  silt grant PRINCIPAL ACTION RESOURCE        allow read|append|admin on a resource
  silt revoke GRANT_ID                        remove a grant
  silt grants [PRINCIPAL]                     list grants
  silt whoami                                 show who the token belongs to
  silt version                                print the version

Client flags (every client verb; also from the environment):
  --server URL     API address (SILT_SERVER, default http://127.0.0.1:7070)
  --token SECRET   bearer token (SILT_TOKEN; default: ./silt-data/root.token if readable)
  --ca-file FILE   PEM CA to trust for https (SILT_CA_FILE)

Run "silt VERB --help" for a verb's flags.
`

var version = "dev"

// usageError marks errors caused by how silt was called (exit status 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch verb, rest := args[0], args[1:]; verb {
	case "serve":
		err = runServe(rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	case "version", "--version":
		fmt.Fprintln(stdout, "silt", version)
	default:
		err = runClient(verb, rest, stdin, stdout, stderr)
	}
	if err == nil {
		return 0
	}
	// The SDK's API errors already begin with "silt: ".
	if msg := err.Error(); strings.HasPrefix(msg, "silt: ") {
		fmt.Fprintln(stderr, msg)
	} else {
		fmt.Fprintln(stderr, "silt:", msg)
	}
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}
