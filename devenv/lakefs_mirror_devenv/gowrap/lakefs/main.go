// Command lakefs runs the lakeFS server of the version pinned in go.mod.
//
// lakeFS's go.mod carries a replace directive, which `go install module@version` refuses, so this
// wrapper module requires lakeFS, repeats the replace, and calls its command entry point.
package main

import "github.com/treeverse/lakefs/cmd/lakefs/cmd"

func main() {
	cmd.Execute()
}
