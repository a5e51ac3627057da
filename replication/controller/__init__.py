"""Every leadership decision: the controller, the election rules, partition reassignment."""
