//go:build race

package gc_test

// raceDetector tells tests that the race detector is on: it makes filling
// a store with 100,000 objects take minutes.
const raceDetector = true
