//go:build !race

package server_test

// raceDetector tells tests that the race detector is on: it slows JSON
// over hundreds of megabytes beyond their time budget.
const raceDetector = false
