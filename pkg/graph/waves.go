package graph

import "fmt"

// Waves returns the node's tasks cut into waves, in order; the slices share
// Tasks' storage. Without WaveStarts every task is a wave of its own.
func (n *Node) Waves() [][]*Task {
	if len(n.Tasks) == 0 {
		return nil
	}
	if len(n.WaveStarts) == 0 {
		waves := make([][]*Task, len(n.Tasks))
		for i := range n.Tasks {
			waves[i] = n.Tasks[i : i+1 : i+1]
		}
		return waves
	}
	waves := make([][]*Task, len(n.WaveStarts))
	for w, start := range n.WaveStarts {
		end := len(n.Tasks)
		if w+1 < len(n.WaveStarts) {
			end = n.WaveStarts[w+1]
		}
		waves[w] = n.Tasks[start:end:end]
	}
	return waves
}

// checkWaves verifies that WaveStarts, when set, begins at the first task
// and rises strictly within Tasks, so that every task is in one wave.
func (n *Node) checkWaves() error {
	for w, start := range n.WaveStarts {
		if (w == 0 && start != 0) || (w > 0 && start <= n.WaveStarts[w-1]) || start >= len(n.Tasks) {
			return fmt.Errorf("graph: node %d has wave starts %v for %d tasks", n.ID, n.WaveStarts, len(n.Tasks))
		}
	}
	return nil
}

// widestWave is the most tasks of the node that may run at once; at least
// one, so that an empty or nil node counts as one worker.
func (n *Node) widestWave() int {
	if n == nil {
		return 1
	}
	widest, end := 1, len(n.Tasks)
	for w := len(n.WaveStarts) - 1; w >= 0; w-- {
		widest = max(widest, end-n.WaveStarts[w])
		end = n.WaveStarts[w]
	}
	return widest
}

// waveStarts cuts tasks into waves: a wave is a maximal run of consecutive
// passive tasks of one run level and component; every other task (a
// barrier, or an unparsed file) is a wave of its own. It returns nil when
// every wave holds one task, so that a serial node stays as it was.
func waveStarts(tasks []*Task) []int {
	var starts []int
	shared := false
	for i, t := range tasks {
		if i == 0 || !t.Passive || !tasks[i-1].Passive || !sameGroup(tasks[i-1], t) {
			starts = append(starts, i)
			continue
		}
		shared = true
	}
	if !shared {
		return nil
	}
	return starts
}

// splitWaves gives every node its waves.
func (g *Graph) splitWaves() {
	for _, n := range g.Nodes {
		n.WaveStarts = waveStarts(n.Tasks)
	}
}
