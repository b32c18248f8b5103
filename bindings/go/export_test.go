package mnem

// PutEpisodesOnce is one call of mnem_put_episodes_v2 with an ids buffer of
// size bytes (wanted false: NULL), for the conformance test (package
// mnem_test), whose cases pass what the API never does. It returns the ids
// (on success, when wanted) and *out_ids_len.
func (s *Store) PutEpisodesOnce(app, user string, jsonl []byte, size int, wanted bool) ([]string, int, error) {
	var ids []byte
	if wanted {
		ids = make([]byte, size)
	}
	n, err := s.putEpisodesOnce(app, user, jsonl, ids)
	if err != nil || !wanted {
		return nil, n, err
	}
	out := make([]string, n/16)
	for i := range out {
		out[i] = formatUUID(ids[16*i : 16*i+16])
	}
	return out, n, nil
}
