// Command pause is the lab's pause container: the process that holds a pod
// sandbox's namespaces. It waits for SIGTERM or SIGINT and, as PID 1 of a pod
// that shares its process namespace, reaps orphaned children. The lab builds
// it statically into the netshift.io/pause image, since no registry serves
// one here.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
