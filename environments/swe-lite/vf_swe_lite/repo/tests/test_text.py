import unittest

from minilib.text import initials, slugify, truncate, word_count


class SlugifyTest(unittest.TestCase):
    def test_words_joined_by_hyphens(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_digits_kept(self):
        self.assertEqual(slugify("Top 10 tips"), "top-10-tips")

    def test_max_length_trims_trailing_hyphen(self):
        self.assertEqual(slugify("alpha beta gamma", max_length=11), "alpha-beta")

    def test_exact_max_length(self):
        self.assertEqual(slugify("abc def", max_length=7), "abc-def")

    def test_empty(self):
        self.assertEqual(slugify("!!!"), "")


class TruncateTest(unittest.TestCase):
    def test_short_text_unchanged(self):
        self.assertEqual(truncate("short", 5), "short")

    def test_cut_with_suffix(self):
        self.assertEqual(truncate("abcdefghij", 8), "abcde...")

    def test_tiny_limit(self):
        self.assertEqual(truncate("abcdefghij", 2), "..")

    def test_limit_equal_to_suffix_plus_one(self):
        self.assertEqual(truncate("abcdefghij", 4), "a...")


class WordCountTest(unittest.TestCase):
    def test_counts_words(self):
        self.assertEqual(word_count("one two  three"), 3)

    def test_whitespace_only(self):
        self.assertEqual(word_count(" \t\n"), 0)

    def test_single_word(self):
        self.assertEqual(word_count("word"), 1)


class InitialsTest(unittest.TestCase):
    def test_two_names(self):
        self.assertEqual(initials("ada lovelace"), "AL")

    def test_hyphenated(self):
        self.assertEqual(initials("jean-paul sartre"), "JPS")

    def test_extra_spaces(self):
        self.assertEqual(initials("  grace   hopper "), "GH")


if __name__ == "__main__":
    unittest.main()
