import unittest

from minilib.seqs import chunked, dedupe, group_by, running_total, window


class ChunkedTest(unittest.TestCase):
    def test_even(self):
        self.assertEqual(chunked([1, 2, 3, 4], 2), [[1, 2], [3, 4]])

    def test_remainder(self):
        self.assertEqual(chunked([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]])

    def test_size_one(self):
        self.assertEqual(chunked("abc", 1), [["a"], ["b"], ["c"]])

    def test_bad_size(self):
        with self.assertRaises(ValueError):
            chunked([1], 0)


class DedupeTest(unittest.TestCase):
    def test_keeps_first(self):
        self.assertEqual(dedupe([3, 1, 3, 2, 1]), [3, 1, 2])

    def test_empty(self):
        self.assertEqual(dedupe([]), [])


class GroupByTest(unittest.TestCase):
    def test_by_length(self):
        self.assertEqual(
            group_by(["a", "bb", "c", "dd", "eee"], len),
            {1: ["a", "c"], 2: ["bb", "dd"], 3: ["eee"]},
        )


class RunningTotalTest(unittest.TestCase):
    def test_prefix_sums(self):
        self.assertEqual(running_total([1, 2, 3, 4]), [1, 3, 6, 10])

    def test_negative(self):
        self.assertEqual(running_total([5, -2, -3]), [5, 3, 0])


class WindowTest(unittest.TestCase):
    def test_pairs(self):
        self.assertEqual(window([1, 2, 3, 4], 2), [(1, 2), (2, 3), (3, 4)])

    def test_full_width(self):
        self.assertEqual(window([1, 2, 3], 3), [(1, 2, 3)])

    def test_too_wide(self):
        self.assertEqual(window([1, 2], 3), [])

    def test_bad_width(self):
        with self.assertRaises(ValueError):
            window([1], 0)


if __name__ == "__main__":
    unittest.main()
