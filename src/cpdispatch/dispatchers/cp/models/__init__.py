"""The CP models, one package each, in one layout: `model` (the CP-SAT model of an instance) and
`dispatcher` (the versions built on it, registered by name): `hcp` (HCP'19 and its ablation),
`pcp19` (PCP'19 and its ablation), `eurora14` (the 2014 dispatcher, on `pcp19`'s per-node model)
and `pcp20` (PCP'20's Section 3, its parts in modules of their own). The front end they share is
one level up (`..frontend`)."""
