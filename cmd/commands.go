package cmd

// The commands that were here before per-file registration; newer commands register
// themselves in their own files.
func init() {
	register(NewCmdInspect)
	register(NewCmdDev)
	register(NewCmdVersion)
}
