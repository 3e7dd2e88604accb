"""What every kernel sum shares, whichever engine computes it: the log-domain pooling
state (:mod:`.state`), a local regression's static description and its mixed-type
product kernel (:mod:`.local_model`), coordinates and log weights (:mod:`.geometry`), key
masks (:mod:`.masks`), observation weights (:mod:`.observation_weights`), the policy for
empty neighbourhoods (:mod:`.empty_policy`) and the local fits of signed weights and
per-row bandwidths (:mod:`.pairs`: problems only the NumPy pairs backend serves)."""
