//go:build !unix

package engine

var platformWalk = walkDirTree
