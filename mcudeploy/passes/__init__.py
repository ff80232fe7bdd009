"""Graph-to-graph rewrites. Each is a pure function Graph -> Graph."""
