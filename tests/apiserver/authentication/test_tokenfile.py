"""--token-auth-file as upstream's tokenfile_test.go (TestTokenFile, TestBadTokenFile,
TestInsufficientColumnsTokenFile) and Go's encoding/csv refusals."""
from __future__ import annotations

import pytest

from kubeplane.apiserver.authentication.tokenfile import TokenFile, TokenFileError, read_csv
from kubeplane.apiserver.authentication.user import UserInfo

UPSTREAM = '''token1,user1,uid1
token2,user2,uid2
token3,user3,uid3,"group1,group2"
token4,user4,uid4,"group2"
token5,user5,uid5,group5
token6,user6,uid6,group5,otherdata
token7,user7,uid7,"group1,group2",otherdata
'''


@pytest.mark.parametrize("token,name,uid,groups", [
    ("token1", "user1", "uid1", ()),
    ("token2", "user2", "uid2", ()),
    ("token3", "user3", "uid3", ("group1", "group2")),
    ("token4", "user4", "uid4", ("group2",)),
    ("token5", "user5", "uid5", ("group5",)),
    ("token6", "user6", "uid6", ("group5",)),
    ("token7", "user7", "uid7", ("group1", "group2")),
])
def test_upstream_token_file(token: str, name: str, uid: str, groups: tuple[str, ...]) -> None:
    user = TokenFile.parse(UPSTREAM).authenticate_token(token)
    assert user == UserInfo(name, uid, (*groups, "system:authenticated"))


@pytest.mark.parametrize("token", ["", "token8", "token1 ", "TOKEN1", "user1"])
def test_unknown_tokens_are_not_authenticated(token: str) -> None:
    assert TokenFile.parse(UPSTREAM).authenticate_token(token) is None


def test_empty_tokens_are_skipped_and_a_duplicate_replaces_the_earlier() -> None:
    tf = TokenFile.parse(',user0,uid0\ntok,first,1\n\n\ntok,second,2\r\n')
    assert set(tf.tokens) == {"tok"} and tf.tokens["tok"].name == "second"


def test_a_record_with_fewer_than_three_columns_is_refused() -> None:
    with pytest.raises(TokenFileError, match=r"^token file 'f.csv' must have at least 3 columns "
                                             r"\(token, user name, user uid\), found 2$"):
        TokenFile.parse("token1,user1,uid1\ntoken2,user2\n", "f.csv")


@pytest.mark.parametrize("text,message", [
    ('token1,user1,uid1\ntoken2,us"er2,uid2\n', 'parse error on line 2: bare " in non-quoted-field'),
    ('token1,"user1"x,uid1\n', 'parse error on line 1: extraneous or missing " in quoted-field'),
    ('a,"b\nc"d,e\n', 'record on line 1; parse error on line 2: extraneous or missing " in quoted-field'),
])
def test_malformed_csv_is_refused_as_go_reads_it(text: str, message: str) -> None:
    with pytest.raises(TokenFileError) as e:
        TokenFile.parse(text)
    assert str(e.value) == message


def test_quoted_fields_hold_commas_quotes_and_newlines() -> None:
    assert list(read_csv('a,"b ""c"", d","x\ny"\n\nlast,,\n')) == [["a", 'b "c", d', "x\ny"], ["last", "", ""]]


def test_a_quoted_field_open_at_the_end_of_the_file_ends_there() -> None:
    assert list(read_csv('t,u,"uid\n')) == [["t", "u", "uid\n"]]


def test_an_empty_uid_is_allowed() -> None:
    assert TokenFile.parse('t,kubernetes-admin,,"kubeadm:cluster-admins"\n').tokens["t"] == \
        UserInfo("kubernetes-admin", "", ("kubeadm:cluster-admins", "system:authenticated"))
