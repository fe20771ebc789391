"""What a user asks for, as typed requests in and Results out: benchmark sweeps, the
optimization ladder, training verification."""
